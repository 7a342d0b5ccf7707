from django.apps import AppConfig


class DraftsConfig(AppConfig):
    name = "drafts"
    verbose_name = "Ads and drafts"
