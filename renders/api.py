"""Scratch tracks over the API: ask for one (202), read it (status, timeline, audio links),
and fetch its audio through an authorised, expiring link (a token in the URL, so an
``<audio>`` element can play it)."""

from __future__ import annotations

from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from adstudio.serializers import InputSerializer
from drafts.models import DraftKind
from drafts.selectors import ads_for
from renders.models import Render, RenderStatus
from renders.services import (
    ACTIVE,
    LATEST,
    audio_link_token,
    render_for_token,
    render_request,
    versions_of,
)

_VERSION = r"^v[1-9][0-9]{0,8}$"


class RenderRequestSerializer(InputSerializer):
    of = serializers.ChoiceField(
        choices=[LATEST, ACTIVE],
        default=LATEST,
        help_text="The versions of each kind not named: the latest, or the active ones.",
    )
    voices = serializers.RegexField(
        _VERSION, required=False, allow_null=True, help_text='"v2"; null leaves voices out.'
    )
    music = serializers.RegexField(
        _VERSION, required=False, allow_null=True, help_text='"v1"; null leaves music out.'
    )
    sfx = serializers.RegexField(
        _VERSION, required=False, allow_null=True, help_text='"v3"; null leaves effects out.'
    )


class RenderVersionsSerializer(serializers.Serializer):
    voices = serializers.CharField(allow_null=True)
    music = serializers.CharField(allow_null=True)
    sfx = serializers.CharField(allow_null=True)


class RenderSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    adId = serializers.UUIDField(source="ad_id")
    status = serializers.ChoiceField(choices=RenderStatus.choices)
    versions = serializers.SerializerMethodField()
    timeline = serializers.JSONField(
        help_text="Measured from the audio: each part's startS and endS, the joins of the "
        "voice tracks, the ad's length against its slot, and warnings."
    )
    seconds = serializers.FloatField(allow_null=True)
    loudnessLufs = serializers.FloatField(source="loudness_lufs", allow_null=True)
    renderMs = serializers.IntegerField(source="render_ms", allow_null=True)
    audioUrl = serializers.SerializerMethodField(help_text="Ogg/Opus; expires.")
    wavUrl = serializers.SerializerMethodField(help_text="WAV; expires.")
    error = serializers.CharField()
    createdAt = serializers.DateTimeField(source="created_at")
    finishedAt = serializers.DateTimeField(source="finished_at", allow_null=True)

    @extend_schema_field(RenderVersionsSerializer)
    def get_versions(self, render: Render) -> dict[str, str | None]:
        return {
            kind: (draft.label if draft else None)
            for kind, draft in (
                ("voices", render.voices),
                ("music", render.music),
                ("sfx", render.sfx),
            )
        }

    def _link(self, render: Render, fmt: str) -> str | None:
        if render.status != RenderStatus.DONE:
            return None
        request = self.context["request"]
        token = audio_link_token(render, user=request.user, fmt=fmt)
        path = reverse("render-audio", args=[render.pk])
        return request.build_absolute_uri(f"{path}?token={token}")

    def get_audioUrl(self, render: Render) -> str | None:
        return self._link(render, "ogg")

    def get_wavUrl(self, render: Render) -> str | None:
        return self._link(render, "wav")


def _version_number(label: str | None) -> int | None:
    return None if label is None else int(label[1:])


class AdRendersView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=RenderRequestSerializer,
        responses={202: RenderSerializer},
        summary="Render a scratch track of the ad's versions",
    )
    def post(self, request: Request, ad_id) -> Response:
        """The versions named, the latest (or active) of the others; a combination rendered
        before is answered at once, never rendered twice."""
        ad = get_object_or_404(ads_for(request.user), pk=ad_id)
        data = RenderRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        chosen = {
            kind: _version_number(values[kind]) for kind in DraftKind.values if kind in values
        }
        versions = versions_of(ad, base=values["of"], chosen=chosen)
        render, _ = render_request(ad=ad, versions=versions, user=request.user)
        render = Render.objects.select_related("voices", "music", "sfx").get(pk=render.pk)
        body = RenderSerializer(render, context={"request": request}).data
        return Response(body, status=status.HTTP_202_ACCEPTED)


class RenderDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=RenderSerializer, summary="A scratch track: status, timeline, audio")
    def get(self, request: Request, pk) -> Response:
        renders = Render.objects.select_related("voices", "music", "sfx").filter(
            ad__in=ads_for(request.user)
        )
        render = get_object_or_404(renders, pk=pk)
        return Response(RenderSerializer(render, context={"request": request}).data)


class RenderAudioView(APIView):
    # The token is the authorisation: an <audio> element sends no Authorization header.
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=[OpenApiParameter("token", str, required=True)],
        responses={
            (200, "audio/ogg"): OpenApiResponse(OpenApiTypes.BINARY),
            (200, "audio/wav"): OpenApiResponse(OpenApiTypes.BINARY),
            404: OpenApiResponse(description="No such render, or the link expired."),
        },
        summary="A scratch track's audio, by the expiring link its render gives",
    )
    def get(self, request: Request, pk) -> FileResponse:
        found = render_for_token(request.query_params.get("token", ""))
        if found is None or str(found[0].pk) != str(pk):
            raise Http404("No such render, or the link expired.")
        render, fmt = found
        field = render.audio if fmt == "ogg" else render.wav
        response = FileResponse(
            field.open("rb"), content_type="audio/ogg" if fmt == "ogg" else "audio/wav"
        )
        response["Cache-Control"] = "private, max-age=300"
        return response
