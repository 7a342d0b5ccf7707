"""REST endpoints for workspaces and their members. Everyone lists the workspaces they
belong to and may start a team workspace; only a workspace's admins see and manage its
members, and a workspace never loses its last admin."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import IntegrityError
from django.db.models import QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from adstudio.schema import refusal_responses
from adstudio.serializers import InputSerializer
from workspaces.access import check
from workspaces.models import Membership, Workspace
from workspaces.roles import Action, Role
from workspaces.selectors import members_of, workspaces_for
from workspaces.services import (
    LastAdmin,
    member_add,
    member_change,
    member_remove,
    workspace_create,
    workspace_personal,
)


class WorkspaceSerializer(serializers.ModelSerializer):
    personal = serializers.SerializerMethodField()
    myRole = serializers.ChoiceField(
        source="my_role",
        choices=Role.choices,
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
    role = serializers.ChoiceField(choices=Role.choices)
    createdAt = serializers.DateTimeField(source="created_at")

    class Meta:
        model = Membership
        fields = ["userId", "username", "role", "createdAt"]


class MemberInputSerializer(InputSerializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Role.choices)

    def validate_username(self, value: str):
        user = get_user_model().objects.filter(username=value, is_active=True).first()
        if user is None:
            raise ValidationError(f"No active user is called {value!r}.")
        return user


class MemberRoleSerializer(InputSerializer):
    role = serializers.ChoiceField(choices=Role.choices)


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
        workspace.my_role = Role.ADMIN
        return Response(WorkspaceSerializer(workspace).data, status=status.HTTP_201_CREATED)


class MemberViewSet(viewsets.GenericViewSet):
    """A workspace's members and their roles: for its admins."""

    serializer_class = MemberSerializer
    lookup_field = "user_id"
    lookup_value_regex = r"\d+"

    def workspace(self) -> tuple[Workspace, bool]:
        """The workspace of the URL (404 unless you are in it) and whether only being a
        superuser lets you manage its members."""
        workspace = get_object_or_404(
            workspaces_for(self.request.user), pk=self.kwargs["workspace_id"]
        )
        return workspace, check(self.request.user, workspace.my_role, Action.MANAGE_MEMBERS)

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

    @extend_schema(request=MemberInputSerializer, responses={201: MemberSerializer})
    def create(self, request: Request, workspace_id) -> Response:
        workspace, as_superuser = self.workspace()
        data = MemberInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = data.validated_data["username"]
        try:
            membership = member_add(
                workspace=workspace,
                user=user,
                role=data.validated_data["role"],
                by=request.user,
                as_superuser=as_superuser,
            )
        except IntegrityError:
            raise ValidationError(
                {"username": f"{user.username} is a member already; change their role."}
            ) from None
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)

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
