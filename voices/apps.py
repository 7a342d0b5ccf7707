from django.apps import AppConfig


class VoicesConfig(AppConfig):
    name = "voices"
    verbose_name = "Voice catalogue"
