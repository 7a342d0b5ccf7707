"""REST endpoints for workspaces and their members. Everyone lists the workspaces they
belong to and may start a team workspace; only a workspace's admins see and manage its
members, and a workspace never loses its last admin."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from adstudio.schema import refusal_responses
from adstudio.serializers import InputSerializer
from workspaces.access import check
from workspaces.invitations import (
    InvitationClosed,
    invitation_accept,
    invitation_decline,
    invitation_revoke,
    invitation_send,
    invitations_for,
)
from workspaces.models import Invitation, InvitationKind, InvitationStatus, Membership, Workspace
from workspaces.roles import Action, MemberRole
from workspaces.selectors import members_of, workspaces_for
from workspaces.services import (
    LastAdmin,
    member_change,
    member_remove,
    workspace_create,
    workspace_personal,
)


class WorkspaceSerializer(serializers.ModelSerializer):
    personal = serializers.SerializerMethodField()
    myRole = serializers.ChoiceField(
        source="my_role",
        choices=MemberRole.choices,
        allow_null=True,
        help_text="Your role here; null for a superuser who is not a member.",
    )
    createdAt = serializers.DateTimeField(source="created_at")

    class Meta:
        model = Workspace
        fields = ["id", "name", "personal", "myRole", "createdAt"]

    def get_personal(self, workspace: Workspace) -> bool:
        return workspace.personal_for_id is not None


class WorkspaceInputSerializer(InputSerializer):
    name = serializers.CharField(max_length=200)


class MemberSerializer(serializers.ModelSerializer):
    userId = serializers.IntegerField(source="user_id")
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=MemberRole.choices)
    createdAt = serializers.DateTimeField(source="created_at")

    class Meta:
        model = Membership
        fields = ["userId", "username", "role", "createdAt"]


class MemberInputSerializer(InputSerializer):
    """Whom to invite: a username or an email address (one of the two), and the role
    they will have once they accept."""

    username = serializers.CharField(max_length=150, required=False)
    email = serializers.EmailField(max_length=254, required=False)
    role = serializers.ChoiceField(choices=MemberRole.choices)

    def validate(self, attrs: dict) -> dict:
        given = [name for name in ("username", "email") if attrs.get(name)]
        if len(given) != 1:
            raise ValidationError(
                {"username": "Give a username or an email address (one of the two)."}
            )
        return attrs


class InvitationSerializer(serializers.ModelSerializer):
    """An invitation as the workspace's admins see it: whom it names as they wrote it,
    never whether such an account exists."""

    invitee = serializers.CharField(source="identifier")
    kind = serializers.ChoiceField(choices=InvitationKind.choices)
    role = serializers.ChoiceField(choices=MemberRole.choices)
    status = serializers.ChoiceField(choices=InvitationStatus.choices)
    invitedBy = serializers.CharField(source="invited_by.username", default="", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    expiresAt = serializers.DateTimeField(source="expires_at")

    class Meta:
        model = Invitation
        fields = ["id", "invitee", "kind", "role", "status", "invitedBy", "createdAt", "expiresAt"]


class ReceivedInvitationSerializer(serializers.ModelSerializer):
    """An invitation as its invitee sees it."""

    workspaceId = serializers.UUIDField(source="workspace_id")
    workspaceName = serializers.CharField(source="workspace.name")
    role = serializers.ChoiceField(choices=MemberRole.choices)
    invitedBy = serializers.CharField(source="invited_by.username", default="", allow_null=True)
    expiresAt = serializers.DateTimeField(source="expires_at")

    class Meta:
        model = Invitation
        fields = ["id", "workspaceId", "workspaceName", "role", "invitedBy", "expiresAt"]


class MemberRoleSerializer(InputSerializer):
    role = serializers.ChoiceField(choices=MemberRole.choices)


class WorkspaceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The workspaces you belong to, with your role in each."""

    serializer_class = WorkspaceSerializer

    def get_queryset(self) -> QuerySet[Workspace]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return Workspace.objects.none()
        return workspaces_for(self.request.user).order_by("name", "created_at")

    def list(self, request: Request, *args, **kwargs) -> Response:
        """Yours, your personal workspace first made if this is your first visit."""
        workspace_personal(user=request.user)
        return super().list(request, *args, **kwargs)

    @extend_schema(request=WorkspaceInputSerializer, responses={201: WorkspaceSerializer})
    def create(self, request: Request) -> Response:
        """Start a team workspace; you are its admin."""
        data = WorkspaceInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        workspace = workspace_create(name=data.validated_data["name"], by=request.user)
        workspace.my_role = MemberRole.ADMIN
        return Response(WorkspaceSerializer(workspace).data, status=status.HTTP_201_CREATED)


def _managed_workspace(request: Request, workspace_id) -> tuple[Workspace, bool]:
    """The workspace of the URL (404 unless you are in it; 403 unless your role manages
    its members) and whether only being a superuser lets you manage them."""
    workspace = get_object_or_404(workspaces_for(request.user), pk=workspace_id)
    return workspace, check(request.user, workspace.my_role, Action.MANAGE_MEMBERS)


class MemberViewSet(viewsets.GenericViewSet):
    """A workspace's members and their roles: for its admins."""

    serializer_class = MemberSerializer
    lookup_field = "user_id"
    lookup_value_regex = r"\d+"

    def workspace(self) -> tuple[Workspace, bool]:
        return _managed_workspace(self.request, self.kwargs["workspace_id"])

    def membership(self, workspace: Workspace) -> Membership:
        return get_object_or_404(
            Membership.objects.select_related("user", "workspace"),
            workspace=workspace,
            user_id=self.kwargs["user_id"],
        )

    @extend_schema(responses=MemberSerializer(many=True))
    def list(self, request: Request, workspace_id) -> Response:
        workspace, _ = self.workspace()
        page = self.paginate_queryset(members_of(workspace=workspace))
        return self.get_paginated_response(MemberSerializer(page, many=True).data)

    @extend_schema(
        request=MemberInputSerializer,
        responses={202: InvitationSerializer},
        summary="Invite someone (a username or an email address); they join when they accept",
    )
    def create(self, request: Request, workspace_id) -> Response:
        """An invitation, answered the same whether the account exists or not: the
        invitee becomes a member only by accepting it (``/api/invitations/``)."""
        workspace, as_superuser = self.workspace()
        data = MemberInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        kind = InvitationKind.EMAIL if values.get("email") else InvitationKind.USERNAME
        identifier = values.get("email") or values["username"]
        if members_of(workspace=workspace).filter(_names(kind, identifier)).exists():
            # The admins see their members anyway: this tells them nothing new.
            raise ValidationError({kind: f"{identifier} is a member already; change their role."})
        invitation = invitation_send(
            workspace=workspace,
            kind=kind,
            identifier=identifier,
            role=values["role"],
            by=request.user,
            as_superuser=as_superuser,
        )
        return Response(InvitationSerializer(invitation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=MemberRoleSerializer,
        responses={200: MemberSerializer, **refusal_responses(LastAdmin)},
    )
    def partial_update(self, request: Request, workspace_id, user_id) -> Response:
        workspace, as_superuser = self.workspace()
        data = MemberRoleSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        membership = member_change(
            membership=self.membership(workspace),
            role=data.validated_data["role"],
            by=request.user,
            as_superuser=as_superuser,
        )
        return Response(MemberSerializer(membership).data)

    @extend_schema(request=None, responses={204: None, **refusal_responses(LastAdmin)})
    def destroy(self, request: Request, workspace_id, user_id) -> Response:
        workspace, as_superuser = self.workspace()
        member_remove(
            membership=self.membership(workspace), by=request.user, as_superuser=as_superuser
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


def _names(kind: str, identifier: str) -> Q:
    """The memberships of the account ``identifier`` names."""
    if kind == InvitationKind.EMAIL:
        return Q(user__email__iexact=identifier)
    return Q(user__username=identifier)


class WorkspaceInvitationViewSet(viewsets.GenericViewSet):
    """A workspace's invitations, for its admins: open ones and their answers; an open
    one may be revoked."""

    serializer_class = InvitationSerializer

    def workspace(self) -> tuple[Workspace, bool]:
        return _managed_workspace(self.request, self.kwargs["workspace_id"])

    @extend_schema(responses=InvitationSerializer(many=True))
    def list(self, request: Request, workspace_id) -> Response:
        workspace, _ = self.workspace()
        invitations = workspace.invitations.select_related("invited_by").order_by("-created_at")
        page = self.paginate_queryset(invitations)
        return self.get_paginated_response(InvitationSerializer(page, many=True).data)

    @extend_schema(request=None, responses={204: None, **refusal_responses(InvitationClosed)})
    def destroy(self, request: Request, workspace_id, invitation_id) -> Response:
        """Revoke an open invitation."""
        workspace, as_superuser = self.workspace()
        invitation = get_object_or_404(workspace.invitations, pk=invitation_id)
        invitation_revoke(invitation=invitation, by=request.user, as_superuser=as_superuser)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ReceivedInvitationViewSet(viewsets.GenericViewSet):
    """The open invitations addressed to you: accept one to join its workspace, or
    decline it. Another person's invitation is not found."""

    serializer_class = ReceivedInvitationSerializer

    def get_queryset(self) -> QuerySet[Invitation]:
        if getattr(self, "swagger_fake_view", False):
            return Invitation.objects.none()
        return invitations_for(self.request.user).order_by("-created_at")

    @extend_schema(responses=ReceivedInvitationSerializer(many=True))
    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(ReceivedInvitationSerializer(page, many=True).data)

    @extend_schema(
        request=None, responses={200: WorkspaceSerializer, **refusal_responses(InvitationClosed)}
    )
    def accept(self, request: Request, invitation_id) -> Response:
        """Join the workspace with the invitation's role."""
        invitation = get_object_or_404(self.get_queryset(), pk=invitation_id)
        membership = invitation_accept(invitation=invitation, user=request.user)
        workspace = membership.workspace
        workspace.my_role = membership.role
        return Response(WorkspaceSerializer(workspace).data)

    @extend_schema(request=None, responses={204: None, **refusal_responses(InvitationClosed)})
    def decline(self, request: Request, invitation_id) -> Response:
        invitation = get_object_or_404(self.get_queryset(), pk=invitation_id)
        invitation_decline(invitation=invitation, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
