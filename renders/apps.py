from django.apps import AppConfig


class RendersConfig(AppConfig):
    name = "renders"
    verbose_name = "Scratch tracks"

    def ready(self) -> None:
        """The render task registered with the Celery app (services send it by name), and
        the renders' sweeps, which the workers run (``adstudio.sweeps``): the recovery, and
        hourly, the files of renders that are gone (a listing of the whole folder)."""
        from django.conf import settings

        from adstudio import sweeps
        from renders import tasks  # noqa: F401
        from renders.recover import render_files_prune, renders_recover

        sweeps.register(
            "renders", interval=settings.ADSTUDIO_RECOVERY_INTERVAL, run=renders_recover
        )
        sweeps.register("render-files", interval=3600.0, run=render_files_prune)
