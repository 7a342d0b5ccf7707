from django.apps import AppConfig
from django.db.models.signals import post_migrate


class DraftsConfig(AppConfig):
    name = "drafts"
    verbose_name = "Ads and drafts"

    def ready(self) -> None:
        from drafts.reviewers import grant_reviewer_permissions

        post_migrate.connect(grant_reviewer_permissions, dispatch_uid="reviewer-permissions")
