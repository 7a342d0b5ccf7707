from django.apps import AppConfig


class RendersConfig(AppConfig):
    name = "renders"
    verbose_name = "Scratch tracks"

    def ready(self) -> None:
        """The render task registered with the Celery app (services send it by name)."""
        from renders import tasks  # noqa: F401
