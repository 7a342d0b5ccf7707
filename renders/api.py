"""Scratch tracks over the API: ask for one (202), read it (status, timeline, audio links),
and fetch its audio through an authorised, expiring link (a token in the URL, so an
``<audio>`` element can play it)."""

from __future__ import annotations

import hashlib
import logging
from typing import Literal

from django.http import Http404, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import content_disposition_header
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from pydantic import BaseModel, ConfigDict, Field, RootModel
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from adstudio.api_errors import error_body
from adstudio.byte_ranges import Unsatisfiable, requested_range
from adstudio.schema import refusal_responses
from adstudio.serializers import InputSerializer
from drafts.models import DraftKind
from drafts.selectors import ads_for
from renders import files
from renders.models import FILE_FIELDS, Render, RenderPreset, RenderStatus
from renders.services import (
    ACTIVE,
    LATEST,
    NoSuchVersion,
    NothingToRender,
    SpeechOverCap,
    audio_link_token,
    download_name,
    render_for_token,
    render_quote,
    render_request,
    render_requeue_missing,
    versions_of,
)

logger = logging.getLogger(__name__)


# --- The timeline's shape, as audio.timeline's ``Timeline.as_json`` writes it -----------
# Keys may be added beside these (``additionalProperties``); none is renamed or removed.


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class TimelineSegment(_Open):
    """Where one part plays."""

    kind: Literal["voice", "music", "sfx"]
    ref: str = Field(description='"track-0", "music", "sfx-0".')
    startS: float
    endS: float
    label: str
    reader: str | None = Field(
        None, description='A voice track\'s reader: its speech provider, or "guide".'
    )
    readBy: str | None = Field(
        None,
        description='Who read a voice track, as said aloud: "ElevenLabs", "ElevenLabs '
        '(cached)", "guide voice: Azure AI Speech not configured".',
    )


class TimelineJoin(_Open):
    """How a voice track meets the one it follows."""

    after: str = Field(description="The track it follows.")
    track: str
    overlapS: float = Field(description="Seconds the two overlap; negative for a gap.")


class TimelineSpeech(_Open):
    """What the render's lines were billed by their speech providers."""

    characters: int
    costUsd: str
    costExact: bool
    cachedLines: int


class Timeline(_Open):
    """A done render's placements, measured from its audio."""

    slotS: float = Field(description="The ad's duration.")
    lengthS: float = Field(description="The slot, or longer when something ends after it.")
    speechEndS: float
    segments: list[TimelineSegment]
    joins: list[TimelineJoin]
    warnings: list[str]
    speech: TimelineSpeech | None = None


class NoTimeline(BaseModel):
    """A render not done: an empty object."""

    model_config = ConfigDict(extra="forbid", json_schema_extra={"maxProperties": 0})


class RenderTimeline(RootModel[Timeline | NoTimeline]):
    """The timeline of a done render; an empty object before."""


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
    preset = serializers.ChoiceField(
        choices=RenderPreset.choices,
        default=RenderPreset.STREAMING,
        help_text="The loudness it is mastered to: streaming (-16 LUFS, -1 dBTP), broadcast "
        "(EBU R 128: -23 LUFS, -1 dBTP) or atsc (ATSC A/85: -24 LKFS, -2 dBTP). The same "
        "versions at another preset are another render.",
        error_messages={
            "invalid_choice": '"{input}" is not a preset: use '
            + ", ".join(RenderPreset.values[:-1])
            + f" or {RenderPreset.values[-1]}."
        },
    )


class RenderVersionsSerializer(serializers.Serializer):
    voices = serializers.CharField(allow_null=True)
    music = serializers.CharField(allow_null=True)
    sfx = serializers.CharField(allow_null=True)


class RenderStemsSerializer(serializers.Serializer):
    voices = serializers.URLField(allow_null=True)
    music = serializers.URLField(allow_null=True)
    sfx = serializers.URLField(allow_null=True)


@extend_schema_field(RenderTimeline)
class _TimelineField(serializers.JSONField):
    pass


class RenderSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    adId = serializers.UUIDField(source="ad_id")
    status = serializers.ChoiceField(choices=RenderStatus.choices)
    versions = serializers.SerializerMethodField()
    timeline = _TimelineField(
        help_text="Measured from the audio: each part's startS and endS, the joins of the "
        "voice tracks, the ad's length against its slot, and warnings; `{}` until done."
    )
    preset = serializers.ChoiceField(choices=RenderPreset.choices)
    seconds = serializers.FloatField(allow_null=True)
    loudnessLufs = serializers.FloatField(
        source="loudness_lufs", allow_null=True, help_text="Integrated, as measured."
    )
    truePeakDbtp = serializers.FloatField(
        source="true_peak_dbtp", allow_null=True, help_text="True peak, as measured."
    )
    renderMs = serializers.IntegerField(source="render_ms", allow_null=True)
    audioUrl = serializers.SerializerMethodField(help_text="Ogg/Opus; expires.")
    wavUrl = serializers.SerializerMethodField(
        help_text="Broadcast WAV, 48 kHz 24-bit, with its bext chunk; expires."
    )
    mp3Url = serializers.SerializerMethodField(help_text="MP3; expires.")
    stemUrls = serializers.SerializerMethodField(
        help_text="Each kind alone (float WAV, before the limiter); null for a kind left "
        "out; expire."
    )
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
        if render.status != RenderStatus.DONE or fmt not in render.file_names():
            return None
        request = self.context["request"]
        token = audio_link_token(render, user=request.user, fmt=fmt)
        path = reverse("render-audio", args=[render.pk])
        return request.build_absolute_uri(f"{path}?token={token}")

    def get_audioUrl(self, render: Render) -> str | None:
        return self._link(render, "ogg")

    def get_wavUrl(self, render: Render) -> str | None:
        return self._link(render, "wav")

    def get_mp3Url(self, render: Render) -> str | None:
        return self._link(render, "mp3")

    @extend_schema_field(RenderStemsSerializer)
    def get_stemUrls(self, render: Render) -> dict[str, str | None]:
        return {kind: self._link(render, f"{kind}.wav") for kind in ("voices", "music", "sfx")}


def _flag(request: Request, name: str) -> bool:
    """A query flag: ``1``/``true``/``yes`` on, absent or ``0``/``false``/``no`` off; any
    other value is a 400 naming it."""
    raw = request.query_params.get(name)
    if raw is None:
        return False
    value = raw.strip().lower()
    if value in ("1", "true", "yes"):
        return True
    if value in ("", "0", "false", "no"):
        return False
    raise serializers.ValidationError({name: [f'"{raw}" is not a flag: use 1 or 0.']})


def _version_number(label: str | None) -> int | None:
    return None if label is None else int(label[1:])


class SpeechLineEstimateSerializer(serializers.Serializer):
    track = serializers.CharField()
    reader = serializers.CharField(help_text='The provider that would read it, or "guide".')
    characters = serializers.IntegerField(help_text="Billed characters; 0 when cached.")
    costUsd = serializers.CharField()
    cached = serializers.BooleanField()
    note = serializers.CharField(required=False, help_text="Why the guide voice reads it.")


class RenderEstimateSerializer(serializers.Serializer):
    characters = serializers.IntegerField(help_text="Characters the providers would bill.")
    costUsd = serializers.CharField(help_text="USD, a decimal string.")
    costExact = serializers.BooleanField(
        help_text="Every line's model has a price: the figure is what will be billed."
    )
    capUsd = serializers.CharField(help_text="The most one render may cost in this workspace.")
    withinCap = serializers.BooleanField()
    composesMusic = serializers.BooleanField(
        help_text="The music's provider would compose it (billed by its licence; no price)."
    )
    lines = SpeechLineEstimateSerializer(many=True)


class AdRendersView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=RenderRequestSerializer,
        parameters=[
            OpenApiParameter(
                "estimate",
                OpenApiTypes.BOOL,
                description="Price the render's speech and render nothing (200).",
            )
        ],
        responses={
            200: RenderEstimateSerializer,
            202: RenderSerializer,
            **refusal_responses(NoSuchVersion, NothingToRender, SpeechOverCap),
        },
        summary="Render a scratch track of the ad's versions, or price it",
    )
    def post(self, request: Request, ad_id) -> Response:
        """The versions named, the latest (or active) of the others; a combination rendered
        before is answered at once, never rendered twice. An archived ad renders too. With
        ``?estimate=1``, what reading its lines would cost, and nothing rendered; a render
        that would cost more than the workspace's cap is refused (409)."""
        ad = get_object_or_404(ads_for(request.user), pk=ad_id)
        data = RenderRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        chosen = {
            kind: _version_number(values[kind]) for kind in DraftKind.values if kind in values
        }
        versions = versions_of(ad, base=values["of"], chosen=chosen)
        if _flag(request, "estimate"):
            quote = render_quote(ad=ad, versions=versions)
            return Response(RenderEstimateSerializer(quote.as_json()).data)
        render, _ = render_request(
            ad=ad, versions=versions, preset=values["preset"], user=request.user
        )
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
        parameters=[
            OpenApiParameter("token", str, required=True),
            OpenApiParameter(
                "Range",
                str,
                location=OpenApiParameter.HEADER,
                description="One byte range, e.g. `bytes=0-1023`; several are answered whole.",
            ),
        ],
        responses={
            (200, "audio/ogg"): OpenApiResponse(OpenApiTypes.BINARY),
            (200, "audio/wav"): OpenApiResponse(OpenApiTypes.BINARY),
            (200, "audio/mpeg"): OpenApiResponse(OpenApiTypes.BINARY),
            (206, "audio/ogg"): OpenApiResponse(OpenApiTypes.BINARY, description="A range."),
            (206, "audio/wav"): OpenApiResponse(OpenApiTypes.BINARY, description="A range."),
            (206, "audio/mpeg"): OpenApiResponse(OpenApiTypes.BINARY, description="A range."),
            404: OpenApiResponse(
                description="No such render, the link expired, or its file is missing from "
                "storage (the render is then queued again: ask for the render again)."
            ),
            416: OpenApiResponse(description="The range lies outside the file."),
            503: OpenApiResponse(description="Storage cannot be reached; retry later."),
        },
        summary="A scratch track's audio, by the expiring link its render gives",
    )
    def get(self, request: Request, pk) -> HttpResponse:
        """Streamed from storage by this process, which checked the link: the bucket stays
        private and reachable from the web hosts only, and a revoked member's link stops
        working at once (a presigned URL would work for its whole life)."""
        found = render_for_token(request.query_params.get("token", ""))
        if found is None or str(found[0].pk) != str(pk):
            raise Http404("No such render, or the link expired.")
        render, fmt = found
        name = getattr(render, FILE_FIELDS[fmt]).name
        if not name:  # a kind the render does not have
            raise Http404("No such render, or the link expired.")
        try:
            stream, size = files.opened(name)
        except FileNotFoundError:
            render_requeue_missing(render, name)
            raise NotFound(
                "The audio is missing from storage and is being made again: ask for the "
                "render again.",
                code="audio_missing",
            ) from None
        except Exception as exc:
            logger.warning("render %s: storage unavailable: %s", render.pk, exc)
            return Response(
                error_body("storage_unavailable", "The audio cannot be read now: try again."),
                status=503,
                headers={"Retry-After": "5"},
            )
        try:
            wanted = _if_range(request, name, requested_range(request.headers.get("Range"), size))
        except Unsatisfiable:
            stream.close()
            response = HttpResponse(status=416)
            response["Content-Range"] = f"bytes */{size}"
            return response
        start, length = (wanted.start, wanted.length) if wanted else (0, size)
        body = files.chunks(stream, start, length)
        response = StreamingHttpResponse(
            body,
            status=206 if wanted else 200,
            content_type=files.CONTENT_TYPES[fmt],
        )
        response["Content-Length"] = str(length)
        if wanted:
            response["Content-Range"] = wanted.content_range(size)
        response["Accept-Ranges"] = "bytes"
        response["ETag"] = _etag(name)
        response["Content-Disposition"] = content_disposition_header(
            False, download_name(render, fmt)
        )
        response["Cache-Control"] = "private, max-age=300"
        return response


def _etag(name: str) -> str:
    """A strong validator: a stored name is never written twice (it carries its claim)."""
    return '"' + hashlib.sha256(name.encode()).hexdigest()[:32] + '"'


def _if_range(request: Request, name: str, wanted):
    """The range, unless ``If-Range`` names another version of the file (then the whole)."""
    validator = request.headers.get("If-Range")
    if wanted is not None and validator and validator.strip() != _etag(name):
        return None
    return wanted
