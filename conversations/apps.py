from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    name = "conversations"
    verbose_name = "Conversations and runs"

    def ready(self) -> None:
        """The run's tasks registered with the Celery app (``runs.enqueue.run_enqueue`` sends
        them by name), and what the project package's observability reads of this app
        given to it: the price table runs are billed with, and the queue of runs."""
        from adstudio.observability import hooks, metrics
        from conversations import tasks  # noqa: F401
        from conversations.selectors import runs_queued
        from providers.pricing import usage_cost

        hooks.use_price_table(usage_cost)
        metrics.count_queued_runs_with(runs_queued)
