from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    name = "providers"
    verbose_name = "LLM providers"

    def warm_up(self) -> None:
        """What a web process's first chat would load (``adstudio.wsgi``): the provider
        SDKs, about 1.6 s of imports."""
        from providers.router import load_adapters

        load_adapters()
