"""Read-only HTTP API over the catalogue: search with the model's semantics, and details.

Views validate the query, call the search service and serialise; nothing else.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    extend_schema_view,
)
from rest_framework import serializers, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from adstudio.db.connection import planned_per_query
from adstudio.languages import LANGUAGE_SCHEMA, UnknownLanguage
from adstudio.pagination import PageNumbers
from adstudio.serializers import QueryParameters
from voices.fields import CATALOGUE_FIELDS
from voices.models import Gender, Voice
from voices.selectors import (
    DEFAULT_COUNT,
    MAX_COUNT,
    InvalidSearch,
    clamp_count,
    voice_query,
    voice_queryset,
)


@extend_schema_field(
    {
        "oneOf": [{"type": "string", "format": "uri"}, {"type": "string", "maxLength": 0}],
        "description": "A sample of the voice; empty when the catalogue has none.",
    }
)
class PreviewURLField(serializers.URLField):
    pass


class VoiceSerializer(serializers.ModelSerializer):
    preview_url = PreviewURLField(read_only=True)

    class Meta:
        model = Voice
        # The catalogue's fields (but its raw provider record), and the curation's.
        fields = [
            "id",
            *(name for name in CATALOGUE_FIELDS if name != "metadata"),
            "approved",
            "active",
        ]
        read_only_fields = fields


class VoiceSearchParams(QueryParameters):
    """The list's query string; language and gender are checked by the search service."""

    language = serializers.CharField()
    gender = serializers.CharField(required=False)
    accent = serializers.CharField(required=False, allow_blank=True)
    style = serializers.CharField(required=False, allow_blank=True)
    count = serializers.IntegerField(required=False)


class VoicePagination(PageNumbers):
    """Pages of ``count`` voices, clamped to 1..50 like the search tool."""

    page_size = DEFAULT_COUNT
    page_size_query_param = "count"
    max_page_size = MAX_COUNT

    def get_page_size(self, request: Request) -> int:
        return clamp_count(request.query_params.get(self.page_size_query_param, self.page_size))


_SEARCH_PARAMETERS = [
    OpenApiParameter(
        "language",
        LANGUAGE_SCHEMA,
        required=True,
        description="ISO code or name, e.g. 'th', 'Thai'; a region ('pt-BR') narrows to "
        "that locale.",
    ),
    OpenApiParameter(
        "gender", OpenApiTypes.STR, enum=Gender.values, description="Omit for any gender."
    ),
    OpenApiParameter(
        "accent", OpenApiTypes.STR, description="Accent or locale, e.g. 'british', 'en-AU'."
    ),
    OpenApiParameter(
        "style",
        OpenApiTypes.STR,
        description="Words matched against style, use case and description, e.g. 'warm'. "
        "Exact style or use-case matches come first.",
    ),
    OpenApiParameter(
        "count",
        OpenApiTypes.INT,
        description=f"Voices per page, clamped to 1..{MAX_COUNT} (default {DEFAULT_COUNT}).",
    ),
]


@extend_schema_view(
    list=extend_schema(
        summary="Search approved voices",
        parameters=_SEARCH_PARAMETERS,
        responses={
            200: VoiceSerializer(many=True),
            400: OpenApiResponse(
                description="A query parameter is missing or invalid; the body names it."
            ),
        },
    ),
    retrieve=extend_schema(
        summary="One voice",
        description="Approved, active voices for everybody; any voice for catalogue "
        "managers (the permission to change voices).",
    ),
)
class VoiceViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = VoiceSerializer
    pagination_class = VoicePagination
    queryset = Voice.objects.defer("metadata")
    lookup_value_regex = r"\d+"

    def get_queryset(self):
        queryset = super().get_queryset()
        # Those who curate the catalogue see every voice; being staff is not enough.
        if not self.request.user.has_perm("voices.change_voice"):
            queryset = queryset.filter(approved=True, active=True)
        return queryset

    def list(self, request: Request, *args, **kwargs) -> Response:
        params = VoiceSearchParams(data=request.query_params)
        params.is_valid(raise_exception=True)
        data = params.validated_data
        try:
            query = voice_query(
                language=data["language"],
                gender=data.get("gender"),
                accent=data.get("accent"),
                style=data.get("style"),
            )
        except UnknownLanguage as exc:
            raise ValidationError({"language": [str(exc)]}) from None
        except InvalidSearch as exc:
            raise ValidationError({exc.field: [str(exc)]}) from None
        with planned_per_query():
            page = self.paginate_queryset(voice_queryset(query).defer("metadata"))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)
