"""REST endpoints for ads (with their brief), their drafts, the current state per kind,
and activation. Every queryset is scoped to the requesting user (staff see all), so
another user's object is a 404."""

from __future__ import annotations

import re

from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiParameter,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
)
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from drafts.models import ActivationSource, Ad, Draft, DraftKind, DraftStatus
from drafts.payloads import MusicVersion, SfxVersion, VoiceVersion
from drafts.selectors import ads_for, draft_state, drafts_for
from drafts.services import ad_create, ad_update, draft_activate
from voices.languages import UnknownLanguage, normalise_language

_FORMAT_SECONDS = re.compile(r"(\d{1,3})\s*(?:s\b|sec|second)", re.IGNORECASE)


class BriefSerializer(serializers.Serializer):
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
    language = serializers.CharField(
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


class AdOutputSerializer(serializers.ModelSerializer):
    brief = BriefOutputSerializer(source="*")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    class Meta:
        model = Ad
        fields = ["id", "title", "brief", "createdAt", "updatedAt"]


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


class AdViewSet(viewsets.ModelViewSet):
    """Ads of the requesting user, with their brief."""

    serializer_class = AdOutputSerializer
    http_method_names = ["get", "post", "put", "patch", "delete", "head", "options"]

    def get_queryset(self) -> QuerySet[Ad]:
        if getattr(self, "swagger_fake_view", False):  # schema generation has no user
            return Ad.objects.none()
        return ads_for(self.request.user).order_by("-created_at")

    @extend_schema(request=BriefSerializer, responses={201: AdOutputSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        brief = BriefSerializer(data=request.data)
        brief.is_valid(raise_exception=True)
        ad = ad_create(owner=request.user, **brief.validated_data)
        return Response(AdOutputSerializer(ad).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=BriefSerializer, responses=AdOutputSerializer)
    def update(self, request: Request, *args, **kwargs) -> Response:
        ad = self.get_object()
        brief = BriefSerializer(data=request.data, partial=kwargs.get("partial", False))
        brief.is_valid(raise_exception=True)
        ad = ad_update(ad=ad, **brief.validated_data)
        return Response(AdOutputSerializer(ad).data)

    @extend_schema(request=BriefSerializer, responses=AdOutputSerializer)
    def partial_update(self, request: Request, *args, **kwargs) -> Response:
        return self.update(request, *args, partial=True, **kwargs)

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

    @extend_schema(request=None, responses=ActivationSerializer)
    @action(detail=True, methods=["post"])
    def activate(self, request: Request, pk=None) -> Response:
        """Make this version live; the version active before and older drafts never
        activated are archived."""
        draft = self.get_object()
        result = draft_activate(
            ad=draft.ad, draft_id=draft.pk, by=request.user, source=ActivationSource.API
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
