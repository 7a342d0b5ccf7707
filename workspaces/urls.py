from django.urls import path
from rest_framework.routers import SimpleRouter

from workspaces.api import MemberViewSet, WorkspaceViewSet

router = SimpleRouter()
router.trailing_slash = "/?"
router.register("workspaces", WorkspaceViewSet, basename="workspace")

members = MemberViewSet.as_view({"get": "list", "post": "create"})
member = MemberViewSet.as_view({"patch": "partial_update", "delete": "destroy"})

urlpatterns = [
    *router.urls,
    path("workspaces/<uuid:workspace_id>/members/", members, name="workspace-members"),
    path(
        "workspaces/<uuid:workspace_id>/members/<int:user_id>/",
        member,
        name="workspace-member",
    ),
]
