from django.urls import path
from rest_framework.routers import SimpleRouter

from workspaces.api import (
    MemberViewSet,
    ReceivedInvitationViewSet,
    WorkspaceInvitationViewSet,
    WorkspaceViewSet,
)

router = SimpleRouter()
router.trailing_slash = "/?"
router.register("workspaces", WorkspaceViewSet, basename="workspace")

members = MemberViewSet.as_view({"get": "list", "post": "create"})
member = MemberViewSet.as_view({"patch": "partial_update", "delete": "destroy"})
sent = WorkspaceInvitationViewSet.as_view({"get": "list"})
sent_one = WorkspaceInvitationViewSet.as_view({"delete": "destroy"})
received = ReceivedInvitationViewSet.as_view({"get": "list"})
accept = ReceivedInvitationViewSet.as_view({"post": "accept"})
decline = ReceivedInvitationViewSet.as_view({"post": "decline"})

urlpatterns = [
    *router.urls,
    path("workspaces/<uuid:workspace_id>/members/", members, name="workspace-members"),
    path(
        "workspaces/<uuid:workspace_id>/members/<int:user_id>/",
        member,
        name="workspace-member",
    ),
    path("workspaces/<uuid:workspace_id>/invitations/", sent, name="workspace-invitations"),
    path(
        "workspaces/<uuid:workspace_id>/invitations/<uuid:invitation_id>/",
        sent_one,
        name="workspace-invitation",
    ),
    path("invitations/", received, name="invitations"),
    path("invitations/<uuid:invitation_id>/accept", accept, name="invitation-accept"),
    path("invitations/<uuid:invitation_id>/decline", decline, name="invitation-decline"),
]
