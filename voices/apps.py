from django.apps import AppConfig
from django.db.models.signals import post_migrate


class VoicesConfig(AppConfig):
    name = "voices"
    verbose_name = "Voice catalogue"

    def ready(self) -> None:
        from voices.catalogue_managers import grant_catalogue_manager_permissions

        post_migrate.connect(
            grant_catalogue_manager_permissions, dispatch_uid="catalogue-manager-permissions"
        )
