"""REST endpoints that start and follow agent runs: generate, chat, run status, cancel,
conversation messages and stats (a run's events: ``events_api``).

Views validate, call one service or selector and serialise; runs are executed by the
Celery worker, and a client that wants the result in the response asks with ``?wait=``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta

from django.conf import settings
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
)
from rest_framework import serializers, status
from rest_framework.exceptions import APIException, ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

import providers
from adstudio.parsers import PayloadTooLarge
from adstudio.schema import refusal_responses
from adstudio.serializers import InputSerializer
from adstudio.throttling import RunRateThrottle
from conversations.events.waits import run_wait
from conversations.models import STATS_PERMISSION, Conversation, Run, RunStatus
from conversations.run_request import RunRequest
from conversations.selectors import (
    agent_stats,
    conversation_latest_for,
    conversation_taking_messages,
    run_drafts,
    run_key_used,
    runs_for,
)
from conversations.services import (
    IdempotencyKeyReused,
    ad_generate,
    chat_send,
    run_audited_as_superuser,
    run_cancel,
)
from drafts.api import BriefSerializer, workspace_for_writing
from drafts.selectors import ads_for
from drafts.services import AdArchived
from workspaces.access import check, require, role_in
from workspaces.roles import Action
from workspaces.services import workspace_personal

# The limits the views enforce, in the schema too: a request the schema allows is not
# refused for its parameters.
WAIT_SCHEMA = {"type": "number", "minimum": 0, "maximum": 60}
WAIT_PARAMETER = OpenApiParameter(
    "wait",
    WAIT_SCHEMA,
    description="Seconds (0..60) to wait for the run to finish before replying.",
)
IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "maxLength": 128},
    location=OpenApiParameter.HEADER,
    description="A retried request with the same key returns the same run.",
)


def seconds_param(request: Request, name: str, maximum: float) -> float:
    raw = request.query_params.get(name, "0")
    try:
        value = float(raw)
    except ValueError:
        raise ValidationError({name: "Must be a number of seconds."}) from None
    if not 0 <= value <= maximum:
        raise ValidationError({name: f"Must be between 0 and {int(maximum)} seconds."})
    return value


class IdempotencyKeyConflict(APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_detail = "Idempotency-Key was already used for a different request."
    default_code = "idempotency_key_reused"


def _idempotency_key(request: Request) -> str:
    """The request's Idempotency-Key ("" without one); ``ValidationError`` when it is one
    no run could have been stored with."""
    key = request.headers.get("Idempotency-Key", "").strip()
    if len(key) > 128:
        raise ValidationError({"Idempotency-Key": "At most 128 characters."})
    if not key.isprintable():  # a NUL would reach PostgreSQL, which refuses it in text
        raise ValidationError({"Idempotency-Key": "Printable characters only."})
    return key


def _idempotency(request: Request) -> tuple[str, str]:
    """The request's Idempotency-Key and its fingerprint: a digest of the method, the
    path and the body, so that the key sent again with another request is refused. The
    query (``?wait=``) is left out: a retry may wait longer."""
    key = _idempotency_key(request)
    if not key:
        return "", ""
    request_text = json.dumps(
        [request.method, request.path, request.data], sort_keys=True, default=str
    )
    return key, hashlib.sha256(request_text.encode()).hexdigest()


# --- Serializers -------------------------------------------------------------------------


class GenerateInputSerializer(InputSerializer):
    adId = serializers.UUIDField(required=False, allow_null=True)
    workspace = serializers.UUIDField(
        required=False,
        allow_null=True,
        help_text="Where a new ad (no adId) is created; your personal workspace if absent.",
    )
    brief = BriefSerializer(required=False)
    provider = serializers.ChoiceField(
        choices=providers.PROVIDER_NAMES, required=False, allow_null=True
    )
    conversationId = serializers.UUIDField(required=False, allow_null=True)

    def validate(self, attrs: dict) -> dict:
        if not attrs.get("adId") and not attrs.get("brief"):
            raise ValidationError({"brief": "Required when adId is not given."})
        return attrs


class ChatInputSerializer(InputSerializer):
    message = serializers.CharField(trim_whitespace=True)
    conversationId = serializers.UUIDField(required=False, allow_null=True)


class RunAcceptedSerializer(serializers.Serializer):
    adId = serializers.UUIDField()
    conversationId = serializers.UUIDField()
    runId = serializers.UUIDField()
    status = serializers.ChoiceField(choices=RunStatus.choices)


class DraftRefSerializer(serializers.Serializer):
    kind = serializers.CharField()
    version = serializers.CharField()
    id = serializers.UUIDField()


class RunErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class UsageSerializer(serializers.Serializer):
    promptTokens = serializers.IntegerField()
    completionTokens = serializers.IntegerField()
    cachedTokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=12, decimal_places=6)
    costExact = serializers.BooleanField()


class RunSerializer(serializers.Serializer):
    runId = serializers.UUIDField()
    adId = serializers.UUIDField()
    conversationId = serializers.UUIDField()
    status = serializers.ChoiceField(choices=RunStatus.choices)
    stopCause = serializers.CharField(allow_blank=True)
    drafts = serializers.DictField(child=serializers.CharField())
    draftsCreated = DraftRefSerializer(many=True)
    message = serializers.CharField(allow_blank=True)
    error = RunErrorSerializer(allow_null=True)
    usage = UsageSerializer()
    provider = serializers.CharField(allow_blank=True)
    model = serializers.CharField(allow_blank=True)
    rounds = serializers.IntegerField()
    createdAt = serializers.DateTimeField()
    startedAt = serializers.DateTimeField(allow_null=True)
    finishedAt = serializers.DateTimeField(allow_null=True)


def run_body(run: Run) -> dict:
    """The run as ``RunSerializer`` documents it (e.g. the cost as a decimal string: the
    JSON renderer would turn a bare ``Decimal`` into a float)."""
    drafts, created = run_drafts(run=run)
    body = {
        "runId": run.pk,
        "adId": run.conversation.ad_id,
        "conversationId": run.conversation_id,
        "status": run.status,
        "stopCause": run.stop_cause,
        "drafts": drafts,
        "draftsCreated": created,
        "message": run.final_message,
        "error": (
            {"code": run.error_code, "message": run.error_message} if run.error_code else None
        ),
        "usage": {
            "promptTokens": run.prompt_tokens,
            "completionTokens": run.completion_tokens,
            "cachedTokens": run.cached_tokens,
            "cost": run.cost,
            "costExact": run.cost_exact,
        },
        "provider": run.provider,
        "model": run.model,
        "rounds": run.rounds,
        "createdAt": run.created_at,
        "startedAt": run.started_at,
        "finishedAt": run.finished_at,
    }
    return RunSerializer(body).data


# --- Views -------------------------------------------------------------------------------


class _RunStartView(APIView):
    """Shared reply of generate and chat: 202 with the run's ids, or 200 with the result
    when the run finishes within ``?wait=`` seconds."""

    throttle_classes = [RunRateThrottle]
    throttle_scope = "runs"

    def is_replay(self, request: Request) -> bool:
        """Whether the request's Idempotency-Key already started a run of the caller's:
        then it is answered with that run, and the run rate limit does not count it."""
        try:
            key = _idempotency_key(request)
        except ValidationError:
            return False  # refused by the view, as a new request
        return run_key_used(user=request.user, idempotency_key=key)

    def reply(self, request: Request, run: Run) -> Response:
        wait = seconds_param(request, "wait", settings.ADSTUDIO_MAX_WAIT_SECONDS)
        if wait:
            run = run_wait(run=run, timeout=wait)
        if run.status in RunStatus.finished():
            return Response(run_body(run), status=status.HTTP_200_OK)
        location = reverse("run-detail", args=[run.pk])
        body = {
            "adId": run.conversation.ad_id,
            "conversationId": run.conversation_id,
            "runId": run.pk,
            "status": run.status,
        }
        return Response(body, status=status.HTTP_202_ACCEPTED, headers={"Location": location})


class GenerateView(_RunStartView):
    @extend_schema(
        request=GenerateInputSerializer,
        parameters=[WAIT_PARAMETER, IDEMPOTENCY_HEADER],
        responses={
            200: RunSerializer,
            202: RunAcceptedSerializer,
            **refusal_responses(AdArchived),
        },
        summary="Generate an ad's drafts from a brief",
    )
    def post(self, request: Request) -> Response:
        seconds_param(request, "wait", settings.ADSTUDIO_MAX_WAIT_SECONDS)
        data = GenerateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        ad = workspace = None
        if values.get("adId"):
            ad = get_object_or_404(ads_for(request.user), pk=values["adId"])
            as_superuser = require(request.user, ad.workspace_id, Action.CHAT)
            if values.get("brief"):
                as_superuser |= require(request.user, ad.workspace_id, Action.EDIT_AD)
        elif values.get("workspace"):
            workspace, as_superuser = workspace_for_writing(
                request.user, values["workspace"], Action.CREATE_AD
            )
            as_superuser |= check(request.user, workspace.my_role, Action.CHAT)
        else:
            workspace, as_superuser = workspace_personal(user=request.user), False
        conversation = None
        if values.get("conversationId"):
            if ad is None:
                raise ValidationError({"adId": "Required with conversationId."})
            conversation = get_object_or_404(
                Conversation.objects.filter(ad=ad, superseded_at=None), pk=values["conversationId"]
            )
        key, fingerprint = _idempotency(request)
        run_request = RunRequest(
            user=request.user,
            ad=ad,
            conversation=conversation,
            provider=values.get("provider"),
            idempotency_key=key,
            idempotency_fingerprint=fingerprint,
        )
        try:
            run, _created = ad_generate(
                request=run_request, brief=values.get("brief") or {}, workspace=workspace
            )
        except IdempotencyKeyReused as exc:
            raise IdempotencyKeyConflict(str(exc)) from None
        except providers.ProviderUnavailable as exc:
            raise ValidationError({"provider": str(exc)}) from None
        if as_superuser:
            run_audited_as_superuser(user=request.user, run=run)
        return self.reply(request, run)


class ChatView(_RunStartView):
    @extend_schema(
        request=ChatInputSerializer,
        parameters=[WAIT_PARAMETER, IDEMPOTENCY_HEADER],
        responses={
            200: RunSerializer,
            202: RunAcceptedSerializer,
            **refusal_responses(AdArchived),
        },
        summary="Send a message about an ad to its creative director",
    )
    def post(self, request: Request, ad_id) -> Response:
        seconds_param(request, "wait", settings.ADSTUDIO_MAX_WAIT_SECONDS)
        # The ad's conversation with the ad and the caller's role: one query for the usual
        # message.
        latest, role = conversation_latest_for(request.user, ad_id=ad_id)
        if latest:
            ad = latest.ad
        else:
            ad = get_object_or_404(ads_for(request.user), pk=ad_id)
            role = role_in(request.user, ad.workspace_id)
        as_superuser = check(request.user, role, Action.CHAT)
        data = ChatInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        text = data.validated_data["message"]
        if len(text) > settings.ADSTUDIO_MAX_MESSAGE_CHARS:
            raise PayloadTooLarge(
                f"message is {len(text)} characters long; the limit is "
                f"{settings.ADSTUDIO_MAX_MESSAGE_CHARS}."
            )
        conversation = conversation_taking_messages(
            ad=ad, latest=latest, conversation_id=data.validated_data.get("conversationId")
        )
        key, fingerprint = _idempotency(request)
        run_request = RunRequest(
            user=request.user,
            ad=ad,
            conversation=conversation,
            text=text,
            idempotency_key=key,
            idempotency_fingerprint=fingerprint,
        )
        try:
            run, _created = chat_send(request=run_request, as_superuser=as_superuser)
        except IdempotencyKeyReused as exc:
            raise IdempotencyKeyConflict(str(exc)) from None
        return self.reply(request, run)


class RunDetailView(APIView):
    @extend_schema(responses=RunSerializer)
    def get(self, request: Request, pk) -> Response:
        run = get_object_or_404(runs_for(request.user), pk=pk)
        return Response(run_body(run))


class RunCancelView(APIView):
    @extend_schema(request=None, responses={202: RunSerializer})
    def post(self, request: Request, pk) -> Response:
        """Cancel a queued run now, or a running one at its next step."""
        run = get_object_or_404(runs_for(request.user), pk=pk)
        if require(request.user, run.conversation.ad.workspace_id, Action.CANCEL):
            run_audited_as_superuser(user=request.user, run=run, action=Action.CANCEL)
        run = run_cancel(run=run)
        run = runs_for(request.user).get(pk=run.pk)
        return Response(run_body(run), status=status.HTTP_202_ACCEPTED)


class CanViewAgentStats(BasePermission):
    """Statistics span every workspace: for those granted it, not for staff as such."""

    def has_permission(self, request: Request, view) -> bool:
        return request.user.has_perm(STATS_PERMISSION)


class StatsView(APIView):
    permission_classes = [IsAuthenticated, CanViewAgentStats]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "days",
                {"type": "integer", "minimum": 1, "maximum": 366},
                description="Period: the last N days (default 7).",
            ),
        ],
        responses=OpenApiTypes.OBJECT,
        summary="Agent health per provider and tool (for those with the permission)",
    )
    def get(self, request: Request) -> Response:
        try:
            days = int(request.query_params.get("days", "7"))
        except ValueError:
            raise ValidationError({"days": "Must be an integer."}) from None
        if not 1 <= days <= 366:
            raise ValidationError({"days": "Must be between 1 and 366."})
        until = timezone.now()
        return Response(agent_stats(since=until - timedelta(days=days), until=until))
