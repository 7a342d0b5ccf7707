from django.apps import AppConfig


class SpeechConfig(AppConfig):
    name = "speech"
    verbose_name = "Speech providers"

    def ready(self) -> None:
        """Read the speech providers' variables at start-up, so a bad value stops the process
        naming it (as ``ProvidersConfig.ready`` does for the LLM providers); the settings
        module may set ``ADSTUDIO_SPEECH_PROVIDERS`` itself."""
        from django.conf import settings

        from speech.configuration import from_environment

        for name, value in from_environment().items():
            if not hasattr(settings, name):
                setattr(settings, name, value)
