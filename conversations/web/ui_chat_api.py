"""HTTP for the AI SDK's chat transport: a ``useChat`` client (``ai`` 5 or 6, with
``DefaultChatTransport({api: "/api/ads/<id>/ui-chat"})``) works against it unmodified.

``POST`` takes the transport's body (``{id, messages, trigger, messageId}``), stores the
last user message and queues its run as chat does (durable, in order, once per message
id), and answers with the run as a UI message stream (``conversations.web.ui_stream``).
``GET <chat id>/stream`` is the transport's resume: the ad's run in progress, from its
start (the SDK replays a resumed stream) or after ``Last-Event-ID``; 204 when no run is in
progress. A client that drops the stream, or aborts it, does not stop the run: cancel it
with ``POST /api/runs/<id>/cancel``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, closing

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.core.validators import ProhibitNullCharactersValidator
from django.http import StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.validators import ProhibitSurrogateCharactersValidator
from rest_framework.views import APIView

from adstudio.db.connection import release_connection
from adstudio.parsers import PayloadTooLarge, SafeJSONParser
from adstudio.schema import refusal_responses
from adstudio.serializers import InputSerializer
from adstudio.stream_slots import AsyncHeldStream, HeldStream, StreamSlot, take_stream_slot
from adstudio.throttling import RunRateThrottle
from conversations.events.access import REVOKED_MESSAGE, ReaderAccess
from conversations.events.follow import (
    End,
    Ending,
    Events,
    Happening,
    KeepAlive,
    follow_run,
    follow_run_sync,
)
from conversations.models import Conversation, Run, RunEventType, RunStatus
from conversations.run_request import RunRequest
from conversations.selectors import conversation_latest, conversations_for, run_key_used
from conversations.services import (
    IdempotencyKeyReused,
    NothingToRegenerate,
    chat_regenerate,
    chat_send,
)
from conversations.web.events_api import (
    SEQUENCE_HEADER_SCHEMA,
    database_gone,
    no_content,
    sequence_param,
)
from conversations.web.ui_stream import DONE, FINISH_FIELDS, HEADERS, UIMessageStream, sse
from drafts.selectors import ads_for
from drafts.services import AdArchived
from workspaces.access import require
from workspaces.roles import Action

# How long a stream stays open for a run that has not finished: as long as a run may take.
_STREAM_SECONDS = settings.CELERY_TASK_TIME_LIMIT


# A message id is kept with its run (Run.client_message_id) and makes its idempotency key.
MESSAGE_ID_MAX = Run._meta.get_field("idempotency_key").max_length - len("ui-chat:")


class ChatHistoryParser(SafeJSONParser):
    """The transport sends the whole conversation with every message, and only the last
    one is read: its body may be eight times as large as other requests' (2 MiB with the
    default ``ADSTUDIO_MAX_BODY_BYTES``)."""

    def max_bytes(self) -> int:
        return 8 * settings.ADSTUDIO_MAX_BODY_BYTES


class UIChatInputSerializer(InputSerializer):
    """The body ``DefaultChatTransport`` posts."""

    id = serializers.CharField(max_length=200, help_text="The chat's id (useChat's `id`).")
    messages = serializers.ListField(
        child=serializers.DictField(), min_length=1, help_text="UIMessage[]; the last is sent."
    )
    trigger = serializers.ChoiceField(
        choices=["submit-message", "regenerate-message"], default="submit-message"
    )
    messageId = serializers.CharField(required=False, allow_null=True, allow_blank=True)

    def validate_messages(self, messages: list[dict]) -> list[dict]:
        last = messages[-1]
        if last.get("role") != "user":
            raise ValidationError("The last message must be the user's.")
        parts = last.get("parts")
        if not isinstance(parts, list):
            raise ValidationError("The last message has no parts.")
        text = message_text(last)
        if not text:
            raise ValidationError("The last message has no text.")
        # As /chat's message field checks its text: PostgreSQL stores neither.
        for validator in (
            ProhibitNullCharactersValidator(),
            ProhibitSurrogateCharactersValidator(),
        ):
            validator(text)
        if isinstance(last.get("id"), str) and not last["id"].isprintable():
            raise ValidationError("The last message's id must be printable text.")
        if isinstance(last.get("id"), str) and len(last["id"]) > MESSAGE_ID_MAX:
            raise ValidationError(
                f"The last message's id must be at most {MESSAGE_ID_MAX} characters."
            )
        if len(text) > settings.ADSTUDIO_MAX_MESSAGE_CHARS:
            raise PayloadTooLarge(
                f"The message is {len(text)} characters long; the limit is "
                f"{settings.ADSTUDIO_MAX_MESSAGE_CHARS}."
            )
        return messages


def message_text(message: dict) -> str:
    """The text of a UIMessage: its text parts, one after the other."""
    parts = message.get("parts") if isinstance(message.get("parts"), list) else []
    texts = [
        part["text"]
        for part in parts
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ]
    return "\n".join(texts).strip()


def _conversation(
    request: Request, ad_id, chat_id: str, *, current: bool = False
) -> tuple[object, Conversation | None]:
    """The ad and the conversation a chat id names: the conversation of that id when it
    is one of the ad's (its current one when ``current``: the one that takes messages),
    otherwise the ad's current one (None: the ad has none yet)."""
    ad = get_object_or_404(ads_for(request.user), pk=ad_id)
    conversations = conversations_for(request.user).filter(ad=ad)
    if current:
        conversations = conversations.filter(superseded_at=None)
    try:
        named = conversations.filter(pk=uuid.UUID(chat_id)).first()
    except ValueError:
        named = None
    return ad, named or conversation_latest(ad_id=ad.pk, conversations=conversations)


class UIChatView(APIView):
    waits_in_event_loop = True  # served by the ASGI handler (adstudio.asgi.routing)
    holds_streams = True  # counts towards the user's open streams (adstudio.schema)
    parser_classes = [ChatHistoryParser]
    renderer_classes = [JSONRenderer]
    throttle_classes = [RunRateThrottle]
    throttle_scope = "runs"

    def is_replay(self, request: Request) -> bool:
        """Whether the last message's id already started a run of the caller's (the
        transport sent it again): then it streams that run, and the run rate limit does
        not count it. A regeneration is always a new run."""
        data = request.data  # a body that cannot be read is refused here as in the view
        if not isinstance(data, dict) or data.get("trigger") == "regenerate-message":
            return False
        messages = data.get("messages")
        last = messages[-1] if isinstance(messages, list) and messages else None
        message_id = last.get("id") if isinstance(last, dict) else None
        if not isinstance(message_id, str) or not message_id.isprintable():
            return False
        if not 0 < len(message_id) <= MESSAGE_ID_MAX:
            return False
        return run_key_used(user=request.user, idempotency_key=f"ui-chat:{message_id}")

    @extend_schema(
        request=UIChatInputSerializer,
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR,
                description="The run as the AI SDK's UI message stream (protocol v1).",
            ),
            **refusal_responses(AdArchived, NothingToRegenerate),
        },
        summary="Send a message with the AI SDK's chat transport (useChat)",
    )
    def post(self, request: Request, ad_id) -> StreamingHttpResponse:
        data = UIChatInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        last = values["messages"][-1]
        text = message_text(last)
        ad, conversation = _conversation(request, ad_id, values["id"], current=True)
        as_superuser = require(request.user, ad.workspace_id, Action.CHAT)
        slot = take_stream_slot(request.user)  # before the run: refused, nothing is started
        try:
            if values["trigger"] == "regenerate-message":
                run = _regenerate(request, conversation, values.get("messageId"), as_superuser)
            else:
                run = _send(request, ad, conversation, last, text, as_superuser)
        except BaseException:
            slot.give_back()
            raise
        return ui_message_stream(
            run,
            after=0,
            slot=slot,
            reader=ReaderAccess(request.user, run.pk),
            asynchronous=isinstance(request._request, ASGIRequest),
        )


def _send(request: Request, ad, conversation, last: dict, text: str, as_superuser: bool) -> Run:
    """The last user message stored and its run queued, once per message id (a retry
    streams the same run)."""
    message_id = last.get("id") if isinstance(last.get("id"), str) else ""
    run_request = RunRequest(
        user=request.user,
        ad=ad,
        conversation=conversation,
        text=text,
        idempotency_key=f"ui-chat:{message_id}" if message_id else "",
        idempotency_fingerprint=hashlib.sha256(text.encode()).hexdigest(),
        client_message_id=message_id,
    )
    try:
        run, _created = chat_send(request=run_request, as_superuser=as_superuser)
    except IdempotencyKeyReused:
        raise ValidationError(
            {"messages": "This message id was sent before with another text."}
        ) from None
    return run


def _regenerate(request: Request, conversation, message_id, as_superuser: bool) -> Run:
    """A new reply to the last user message, in place of the last one (``messageId``)."""
    if conversation is None:
        raise NothingToRegenerate("This chat has no reply to regenerate.")
    return chat_regenerate(
        conversation=conversation,
        user=request.user,
        message_id=message_id if isinstance(message_id, str) else "",
        as_superuser=as_superuser,
    )


# What the URL takes (``<str:chat_id>``, a path segment) is what the schema allows.
CHAT_ID_SCHEMA = {"type": "string", "minLength": 1, "pattern": "^[^/]+$"}


class UIChatStreamView(APIView):
    waits_in_event_loop = True  # served by the ASGI handler (adstudio.asgi.routing)
    holds_streams = True  # counts towards the user's open streams (adstudio.schema)
    renderer_classes = [JSONRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "chat_id",
                CHAT_ID_SCHEMA,
                location=OpenApiParameter.PATH,
                description="useChat's chat id: any text (the ad's id, say); a conversation's "
                "id names that conversation of the ad, anything else the ad's latest.",
            ),
            OpenApiParameter(
                "Last-Event-ID",
                SEQUENCE_HEADER_SCHEMA,
                location=OpenApiParameter.HEADER,
                description="Continue after the chunk with this id (each chunk's id is its "
                "place in the run's stream, from 1) rather than replay the run.",
            ),
        ],
        responses={
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR, description="The run in progress as a UI message stream."
            ),
            204: OpenApiResponse(description="No run of this chat is in progress."),
        },
        summary="Resume the AI SDK chat transport's stream",
    )
    def get(self, request: Request, ad_id, chat_id: str):
        _ad, conversation = _conversation(request, ad_id, chat_id)
        run = (
            Run.objects.filter(conversation=conversation)
            .exclude(status__in=RunStatus.finished())
            .order_by("created_at")
            .first()
            if conversation
            else None
        )
        if run is None:
            return no_content()
        after = sequence_param(request.headers.get("Last-Event-ID", "0"), "Last-Event-ID")
        return ui_message_stream(
            run,
            after=after,
            slot=take_stream_slot(request.user),
            reader=ReaderAccess(request.user, run.pk),
            asynchronous=isinstance(request._request, ASGIRequest),
        )


def ui_message_stream(
    run: Run,
    *,
    after: int,
    slot: StreamSlot,
    reader: ReaderAccess,
    asynchronous: bool = False,
) -> StreamingHttpResponse:
    """The run's UI message stream: its stored events after ``after`` (from its start
    when 0), then each event as it is stored, until the run's end and ``[DONE]``, or an
    error chunk when its ``reader`` may no longer read it. Under ASGI (``asynchronous``)
    the body waits for the run's events without a thread (``events.follow``)."""
    body = _UIStreamBody(run, after=after, reader=reader)
    release_connection()  # the body reads with connections of its own
    if asynchronous:
        content = AsyncHeldStream(body.chunks_async(), slot)
    else:
        content = HeldStream(body.chunks(), slot)
    response = StreamingHttpResponse(content, content_type="text/event-stream")
    for name, value in HEADERS.items():
        response[name] = value
    return response


ACCESS_REVOKED = f"data: {json.dumps({'type': 'error', 'errorText': REVOKED_MESSAGE})}\n\n"


class _UIStreamBody:
    """One UI message stream's text: what following its run yields (``events.follow``), said
    as the AI SDK's chunks, from an ASGI coroutine or a WSGI thread."""

    def __init__(self, run: Run, *, after: int, reader: ReaderAccess) -> None:
        self.run = run
        # Made again from the run's first event; its finish reads the run's totals.
        self.follow = {
            "after": 0,
            "duration": _STREAM_SECONDS,
            "reader": reader,
            "refresh_on_finish": FINISH_FIELDS,
        }
        self.resume_after = after  # the last chunk the client has (its Last-Event-ID)
        self.made = 0  # the chunks made so far, sent or not: the next one's id less one
        self.ui = UIMessageStream(run)
        self.done = False

    def chunks(self) -> Iterator[str]:
        yield from self._numbered(self.ui.start())
        with closing(follow_run_sync(self.run, **self.follow)) as follow:
            for happening in follow:
                yield from self._text(happening)
                if self.done:
                    return

    async def chunks_async(self) -> AsyncIterator[str]:
        for chunk in self._numbered(self.ui.start()):
            yield chunk
        async with aclosing(follow_run(self.run, **self.follow)) as follow:
            async for happening in follow:
                for chunk in self._text(happening):
                    yield chunk
                if self.done:
                    return

    def _text(self, happening: Happening) -> Iterator[str]:
        match happening:
            case Events(events=events):
                yield from self._chunks_of(events)
            case KeepAlive():
                yield ": keep-alive\n\n"
            case End(why=Ending.DATABASE_GONE):  # without [DONE]: the client resumes
                yield database_gone("ui message stream", self.run.pk)
            case End(why=Ending.ACCESS_REVOKED):
                yield ACCESS_REVOKED
            case End():  # finished with no run.finished event to end on, or time ran out
                yield DONE

    def _numbered(self, chunks: list) -> Iterator[str]:
        """Each chunk with its own id, its place in the run's stream; a resumed stream
        is made again from the run's first event and sends what comes after the client's
        last chunk, so it continues exactly where the client stopped."""
        for chunk in chunks:
            self.made += 1
            if self.made > self.resume_after:
                yield sse(chunk, chunk_id=self.made)

    def _chunks_of(self, events: list) -> Iterator[str]:
        for event in events:
            yield from self._numbered(self.ui.chunks(event))
            if event.type == RunEventType.RUN_FINISHED:  # the message ends with the run
                self.done = True
                yield DONE
                return
