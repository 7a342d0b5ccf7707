from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
    verbose_name = "LLM providers"

    def ready(self) -> None:
        """Read the providers' variables now, at start-up, so that a bad value stops the
        process with ``ImproperlyConfigured`` naming it (``manage.py`` prints it on one
        line), as the settings do for theirs. The project package knows no provider, so
        the app reads its own: the router's settings (``ADSTUDIO_PROVIDERS``,
        ``ADSTUDIO_PROVIDER_ROUTES``, ``ADSTUDIO_PROVIDER_FALLBACKS``) are set from them,
        unless the settings module sets one itself."""
        from django.conf import settings

        from providers.configuration import from_environment

        for name, value in from_environment().items():
            if not hasattr(settings, name):
                setattr(settings, name, value)

    def warm_up(self) -> None:
        """What a web process's first chat would load (``adstudio.wsgi``): the provider
        SDKs, about 1.6 s of imports."""
        from providers.router import load_adapters

        load_adapters()
