"""REST endpoints for ads (with their brief), their drafts, the current state per kind,
and activation. Every queryset is scoped to the workspaces the requesting user belongs to,
so an object of another workspace is a 404; what their role there does not allow is a 403
(``workspaces.roles``)."""

from __future__ import annotations

import re
import uuid

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from adstudio.languages import LANGUAGE_SCHEMA, UnknownLanguage, normalise_language
from adstudio.schema import refusal_responses
from adstudio.serializers import InputSerializer
from drafts.models import ActivationSource, Ad, Draft, DraftKind, DraftStatus
from drafts.payloads import MusicVersion, SfxVersion, VoiceVersion
from drafts.selectors import ads_for, draft_state, drafts_for
from drafts.services import (
    AdArchived,
    ad_archive,
    ad_create,
    ad_move,
    ad_update,
    draft_activate,
)
from workspaces.access import check, require
from workspaces.roles import Action
from workspaces.selectors import workspaces_for
from workspaces.services import workspace_personal

_FORMAT_SECONDS = re.compile(r"(\d{1,3})\s*(?:s\b|sec|second)", re.IGNORECASE)


@extend_schema_field(LANGUAGE_SCHEMA)
class LanguageField(serializers.CharField):
    """A language in any spelling ``adstudio.languages`` reads."""


class BriefSerializer(InputSerializer):
    """The brief as the web client sends it (camelCase)."""

    title = serializers.CharField(max_length=200, required=False, allow_blank=True)
    clientDescription = serializers.CharField(max_length=2000, source="client")
    targetAudience = serializers.CharField(
        max_length=2000, required=False, allow_blank=True, source="audience"
    )
    durationSeconds = serializers.IntegerField(
        min_value=5, max_value=120, required=False, source="duration_s"
    )
    format = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        write_only=True,
        help_text='Free text such as "30s audio ad"; its seconds are used when '
        "durationSeconds is absent.",
    )
    market = serializers.CharField(max_length=64, required=False, allow_blank=True)
    language = LanguageField(
        max_length=64, help_text="A code or name: th, th-TH, Thai, pt-BR, mandarin ..."
    )
    additionalContext = serializers.CharField(
        max_length=4000, required=False, allow_blank=True, source="context"
    )

    def validate_language(self, value: str) -> str:
        try:
            return normalise_language(value).code
        except UnknownLanguage as exc:
            raise ValidationError(str(exc)) from None

    def validate(self, attrs: dict) -> dict:
        text = attrs.pop("format", "")
        if "duration_s" not in attrs and text:
            match = _FORMAT_SECONDS.search(text)
            if match:
                seconds = int(match.group(1))
                if not 5 <= seconds <= 120:
                    raise ValidationError({"format": f"{seconds} s is outside 5..120 seconds."})
                attrs["duration_s"] = seconds
        return attrs


class BriefOutputSerializer(serializers.Serializer):
    clientDescription = serializers.CharField(source="client")
    targetAudience = serializers.CharField(source="audience")
    durationSeconds = serializers.IntegerField(source="duration_s")
    market = serializers.CharField()
    language = serializers.CharField()
    additionalContext = serializers.CharField(source="context")


class AdCreateSerializer(BriefSerializer):
    workspace = serializers.UUIDField(
        required=False, help_text="The workspace to create it in; your personal one if absent."
    )


class AdMoveSerializer(InputSerializer):
    workspace = serializers.UUIDField(help_text="A workspace you are an admin of.")


class AdOutputSerializer(serializers.ModelSerializer):
    brief = BriefOutputSerializer(source="*")
    workspaceId = serializers.UUIDField(source="workspace_id")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")
    archivedAt = serializers.DateTimeField(
        source="archived_at", allow_null=True, help_text="Set when archived: read-only."
    )

    class Meta:
        model = Ad
        fields = ["id", "title", "workspaceId", "brief", "createdAt", "updatedAt", "archivedAt"]


ARCHIVED_CHOICES = ("exclude", "include", "only")


def workspace_for_writing(user, workspace_id, action: Action, field: str = "workspace"):
    """The workspace ``workspace_id`` names for ``action`` (and whether only being a
    superuser allows it): a 404 naming ``field`` unless ``user`` belongs to it (whether
    it exists is not theirs to learn), a 403 unless their role allows ``action``."""
    workspace = workspaces_for(user).filter(pk=workspace_id).first()
    if workspace is None:
        raise NotFound(f"{field}: no workspace {workspace_id} of yours.")
    return workspace, check(user, workspace.my_role, action)  # the role came with it


@extend_schema_field(
    PolymorphicProxySerializer(
        component_name="DraftPayload",
        serializers=[VoiceVersion, MusicVersion, SfxVersion],
        resource_type_field_name=None,
    )
)
class DraftPayloadField(serializers.JSONField):
    """The payload, documented as its kind's version shape (docs/api.md)."""


class DraftOutputSerializer(serializers.ModelSerializer):
    adId = serializers.UUIDField(source="ad_id")
    version = serializers.CharField(source="label", help_text='"v1", "v2", ...')
    versionNumber = serializers.IntegerField(source="version")
    createdBy = serializers.CharField(source="created_by")
    runId = serializers.UUIDField(source="run_id", allow_null=True)
    parentVersion = serializers.SerializerMethodField()
    createdAt = serializers.DateTimeField(source="created_at")
    activatedAt = serializers.DateTimeField(source="activated_at", allow_null=True)
    payload = DraftPayloadField(
        help_text="VoiceVersion, MusicVersion or SfxVersion, as the draft's kind says."
    )

    class Meta:
        model = Draft
        fields = [
            "id",
            "adId",
            "kind",
            "version",
            "versionNumber",
            "status",
            "summary",
            "payload",
            "createdBy",
            "runId",
            "parentVersion",
            "createdAt",
            "activatedAt",
        ]

    def get_parentVersion(self, draft: Draft) -> str | None:
        return draft.parent.label if draft.parent_id else None


class KindStateSerializer(serializers.Serializer):
    latest = serializers.CharField(allow_null=True)
    latestSummary = serializers.CharField(allow_null=True)
    active = serializers.CharField(allow_null=True)
    activeSummary = serializers.CharField(allow_null=True)
    archived = serializers.ListField(child=serializers.CharField())


class AdStateSerializer(serializers.Serializer):
    voices = KindStateSerializer()
    music = KindStateSerializer()
    sfx = KindStateSerializer()


class ActivationSerializer(serializers.Serializer):
    draft = DraftOutputSerializer()
    archivedVersion = serializers.CharField(
        allow_null=True, help_text="The version that was active before, if any."
    )
    archivedVersions = serializers.ListField(
        child=serializers.CharField(),
        help_text="Versions this activation archived: the one active before and older "
        "drafts never activated.",
    )
    changed = serializers.BooleanField()
    message = serializers.CharField()


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("workspace", OpenApiTypes.UUID, description="Only this one's."),
            OpenApiParameter(
                "archived",
                str,
                enum=ARCHIVED_CHOICES,
                description="Archived ads are left out (`exclude`, the default), listed "
                "with the others (`include`) or alone (`only`).",
            ),
        ]
    ),
    destroy=extend_schema(
        summary="Archive an ad",
        description="Ads are archived, never deleted: the ad stays readable with its "
        "drafts, conversation and runs, can no longer be changed, and is left out of lists.",
    ),
)
class AdViewSet(viewsets.ModelViewSet):
    """Ads of the workspaces the requesting user belongs to, with their brief."""

    serializer_class = AdOutputSerializer
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Ad]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return Ad.objects.none()
        ads = ads_for(self.request.user).order_by("-created_at")
        if self.action != "list":
            return ads
        params = self.request.query_params
        archived = params.get("archived", "exclude")
        if archived not in ARCHIVED_CHOICES:
            raise ValidationError({"archived": f"Must be one of: {', '.join(ARCHIVED_CHOICES)}."})
        if archived != "include":
            ads = ads.filter(archived_at__isnull=archived == "exclude")
        if "workspace" in params:  # given empty, it names no workspace: refused
            try:
                ads = ads.filter(workspace_id=uuid.UUID(params["workspace"]))
            except ValueError:
                raise ValidationError({"workspace": "Must be a workspace's id."}) from None
        return ads

    @extend_schema(request=AdCreateSerializer, responses={201: AdOutputSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        brief = AdCreateSerializer(data=request.data)
        brief.is_valid(raise_exception=True)
        fields = dict(brief.validated_data)
        workspace_id = fields.pop("workspace", None)
        if workspace_id is None:
            workspace, as_superuser = workspace_personal(user=request.user), False
        else:
            workspace, as_superuser = workspace_for_writing(
                request.user, workspace_id, Action.CREATE_AD
            )
        ad = ad_create(owner=request.user, workspace=workspace, as_superuser=as_superuser, **fields)
        return Response(AdOutputSerializer(ad).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=BriefSerializer,
        responses={200: AdOutputSerializer, **refusal_responses(AdArchived)},
    )
    def update(self, request: Request, *args, **kwargs) -> Response:
        ad = self.get_object()
        as_superuser = require(request.user, ad.workspace_id, Action.EDIT_AD)
        brief = BriefSerializer(data=request.data, partial=kwargs.get("partial", False))
        brief.is_valid(raise_exception=True)
        ad = ad_update(ad=ad, by=request.user, as_superuser=as_superuser, **brief.validated_data)
        return Response(AdOutputSerializer(ad).data)

    @extend_schema(
        request=BriefSerializer,
        responses={200: AdOutputSerializer, **refusal_responses(AdArchived)},
    )
    def partial_update(self, request: Request, *args, **kwargs) -> Response:
        return self.update(request, *args, partial=True, **kwargs)

    def destroy(self, request: Request, *args, **kwargs) -> Response:
        ad = self.get_object()
        as_superuser = require(request.user, ad.workspace_id, Action.ARCHIVE_AD)
        ad_archive(ad=ad, by=request.user, as_superuser=as_superuser)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        request=AdMoveSerializer,
        responses={200: AdOutputSerializer, **refusal_responses(AdArchived)},
    )
    @action(detail=True, methods=["post"])
    def move(self, request: Request, pk=None) -> Response:
        """Move the ad, with its drafts, conversation and runs, to another workspace: you
        must be an admin of both."""
        ad = self.get_object()
        data = AdMoveSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        from_superuser = require(request.user, ad.workspace_id, Action.MOVE_AD)
        workspace, to_superuser = workspace_for_writing(
            request.user, data.validated_data["workspace"], Action.MOVE_AD
        )
        ad = ad_move(
            ad=ad, workspace=workspace, by=request.user, as_superuser=from_superuser or to_superuser
        )
        return Response(AdOutputSerializer(ad).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("kind", str, enum=DraftKind.values),
            OpenApiParameter("status", str, enum=DraftStatus.values),
        ],
        responses=DraftOutputSerializer(many=True),
    )
    @action(detail=True, methods=["get"])
    def drafts(self, request: Request, pk=None) -> Response:
        """The ad's drafts, newest version first, optionally of one kind or status."""
        ad = self.get_object()
        drafts = Draft.objects.filter(ad=ad).select_related("parent").order_by("kind", "-version")
        for name, choices in (("kind", DraftKind.values), ("status", DraftStatus.values)):
            value = request.query_params.get(name)
            if value:
                if value not in choices:
                    raise ValidationError({name: f"Must be one of: {', '.join(choices)}."})
                drafts = drafts.filter(**{name: value})
        page = self.paginate_queryset(drafts)
        return self.get_paginated_response(DraftOutputSerializer(page, many=True).data)

    @extend_schema(responses=AdStateSerializer)
    @action(detail=True, methods=["get"])
    def state(self, request: Request, pk=None) -> Response:
        """Latest and active version per kind, as the get_current_state tool returns."""
        return Response(draft_state(ad=self.get_object()))


class DraftViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = DraftOutputSerializer

    def get_queryset(self) -> QuerySet[Draft]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return Draft.objects.none()
        return drafts_for(self.request.user)

    @extend_schema(
        request=None, responses={200: ActivationSerializer, **refusal_responses(AdArchived)}
    )
    @action(detail=True, methods=["post"])
    def activate(self, request: Request, pk=None) -> Response:
        """Make this version live; the version active before and older drafts never
        activated are archived."""
        draft = self.get_object()
        as_superuser = require(request.user, draft.ad.workspace_id, Action.ACTIVATE)
        result = draft_activate(
            ad=draft.ad,
            draft_id=draft.pk,
            by=request.user,
            source=ActivationSource.API,
            as_superuser=as_superuser,
        )
        return Response(
            {
                "draft": DraftOutputSerializer(result.draft).data,
                "archivedVersion": result.replaced.label if result.replaced else None,
                "archivedVersions": [old.label for old in result.archived],
                "changed": result.changed,
                "message": result.message,
            }
        )
