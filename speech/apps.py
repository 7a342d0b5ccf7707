from django.apps import AppConfig


class SpeechConfig(AppConfig):
    name = "speech"
    verbose_name = "Speech providers"

    def ready(self) -> None:
        """Read the speech providers' variables at start-up, so a bad value stops the process
        naming it (as ``ProvidersConfig.ready`` does for the LLM providers); the settings
        module may set ``ADSTUDIO_SPEECH_PROVIDERS`` itself. Register the cache's prune."""
        from django.conf import settings

        from adstudio import sweeps
        from speech.cache import cache_prune
        from speech.configuration import from_environment

        for name, value in from_environment().items():
            if not hasattr(settings, name):
                setattr(settings, name, value)
        # Daily, in a worker (``adstudio.sweeps``): lines and music kept past their days.
        sweeps.register(
            "speech-cache",
            interval=86400.0,
            run=lambda: cache_prune(keep_days=settings.ADSTUDIO_SPEECH_CACHE_DAYS),
        )
