from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    verbose_name = "Conversations and runs"

    def ready(self) -> None:
        """The run's tasks registered with the Celery app (``runs.enqueue.run_enqueue`` sends
        them by name), what the project package's observability reads of this app given
        to it (the price table runs are billed with, the queue of runs, and the statistics'
        permission, which lets a user read ``/metrics``), and the
        runs' recovery sweep, which the workers run (``adstudio.sweeps``).

        The admin's pages are registered here too (``staff.admin``): Django's admin looks
        for an app's ``admin`` module at its root, and this app keeps its staff pages
        with the rest of what staff use, in ``staff/``; importing them when the app is
        ready registers them as that discovery would, with no module at the root that
        only imports another."""
        from django.conf import settings

        from adstudio import sweeps
        from adstudio.observability import hooks, metrics, views
        from conversations import tasks  # noqa: F401
        from conversations.models import STATS_PERMISSION
        from conversations.runs.recover import runs_recover
        from conversations.selectors import runs_queued
        from conversations.staff import admin  # noqa: F401
        from providers.pricing import usage_cost

        hooks.use_price_table(usage_cost)
        metrics.count_queued_runs_with(runs_queued)
        views.readable_with(STATS_PERMISSION)
        sweeps.register("runs", interval=settings.ADSTUDIO_RECOVERY_INTERVAL, run=runs_recover)
