"""HTTP: a run's progress events, as JSON pages (long polling) or Server-Sent Events.

An event stream resumes where a reconnecting EventSource says it stopped
(``Last-Event-ID``), and a finished run's stream ends with a 204 so that it stops.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing, closing

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from adstudio.db.connection import release_connection
from adstudio.stream_slots import AsyncHeldStream, HeldStream, StreamSlot, take_stream_slot
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
from conversations.events.waits import run_events_page
from conversations.models import Run, RunEvent, RunStatus
from conversations.selectors import runs_for
from conversations.web.api import WAIT_SCHEMA, seconds_param

logger = logging.getLogger(__name__)


@extend_schema_field({"type": "object", "additionalProperties": True})
class EventDataField(serializers.JSONField):
    """An event's fields (docs/api.md lists them per type): a JSON object."""


class EventSerializer(serializers.ModelSerializer):
    data = EventDataField()

    class Meta:
        model = RunEvent
        fields = ["seq", "type", "data", "created_at"]


class PageErrorSerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=["database_unavailable"])
    message = serializers.CharField()


class EventsPageSerializer(serializers.Serializer):
    runStatus = serializers.ChoiceField(choices=RunStatus.choices)
    events = EventSerializer(many=True)
    lastSeq = serializers.IntegerField()
    error = PageErrorSerializer(
        required=False,
        help_text="Only on a long poll whose wait ended because the database stopped "
        "answering (its 200 was sent already): no events, ask again shortly.",
    )


class ServerSentEventSerializer(serializers.Serializer):
    """One event of the stream, as an EventSource hands it over."""

    id = serializers.CharField(help_text="The event's seq: where a reconnection resumes.")
    event = serializers.CharField(help_text="The event's type, e.g. tool_call.finished.")
    data = serializers.CharField(help_text="The event as JSON, as in the JSON page's events.")


class EventStreamRenderer(BaseRenderer):
    """Lets content negotiation accept ``text/event-stream`` (or ``?format=sse``); the
    view streams the body itself, and errors are JSON."""

    media_type = "text/event-stream"
    format = "sse"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data


AFTER_PARAMETER = OpenApiParameter(
    "after", {"type": "integer", "minimum": 0}, description="Events after this seq."
)
# A header's value is text: an EventSource sends back the id it was given, as it was given.
SEQUENCE_HEADER_SCHEMA = {"type": "string", "pattern": "^[0-9]+$"}
# How long an EventSource waits before it reconnects to a stream that sent nothing.
IDLE_RETRY_MS = 10_000
# ... and to one that ended because the database stopped answering.
DATABASE_RETRY_MS = 3_000


def database_gone(what: str, run_id) -> str:
    """A stream's last words when the database stops answering after its headers were
    sent: a comment and how long its EventSource waits before it reconnects (with
    ``Last-Event-ID``, so nothing is lost). Logged once, as a warning: the outage is the
    news, not a traceback per stream."""
    logger.warning("%s of run %s ended: the database did not answer", what, run_id)
    return f": the database did not answer; reconnect\nretry: {DATABASE_RETRY_MS}\n\n"


class RunEventsView(APIView):
    """A run's events as JSON pages. A client that negotiates an event stream here
    (``Accept: text/event-stream``, ``?format=sse``) gets the stream of
    ``RunEventStreamView``, as it always has."""

    renderer_classes = [JSONRenderer, EventStreamRenderer]
    waits_in_event_loop = True  # served by the ASGI handler (adstudio.asgi.routing)
    holds_streams = True  # a stream or a long poll: counts towards the user's open streams

    @extend_schema(
        parameters=[
            AFTER_PARAMETER,
            OpenApiParameter(
                "wait", WAIT_SCHEMA, description="Long-poll up to this many seconds (0..60)."
            ),
            OpenApiParameter("format", str, enum=["json"], description="The page as JSON."),
        ],
        # JSON only: the Server-Sent Events of a client that negotiates them here are
        # those of ``/events/stream``, documented there with their own type.
        responses={(200, "application/json"): EventsPageSerializer},
        summary="A run's progress events, a page at a time (JSON, long polling)",
    )
    def get(self, request: Request, pk):
        run = get_object_or_404(runs_for(request.user), pk=pk)
        after = sequence_param(request.query_params.get("after", "0"), "after")
        wait = seconds_param(request, "wait", settings.ADSTUDIO_MAX_WAIT_SECONDS)
        if isinstance(request.accepted_renderer, EventStreamRenderer):
            return _stream_response(request, run, after=after, wait=wait)
        if not wait:
            events, run_status = run_events_page(run_id=run.pk, status=run.status, after=after)
            return Response(events_page(events, run_status, after))
        slot = take_stream_slot(request.user)  # a long poll is a stream that sends once
        reader = ReaderAccess(request.user, run.pk)
        if isinstance(request._request, ASGIRequest):
            return _long_poll_response(run, after=after, wait=wait, slot=slot, reader=reader)
        try:  # served by a thread (WSGI): it waits here, and its status is not out yet
            with closing(
                follow_run_sync(run, **_waiting_once(after, wait), reader=reader)
            ) as follow:
                happening = next(filter(_news, follow))
        finally:
            slot.give_back()
        if isinstance(happening, End) and happening.error is not None:
            raise happening.error  # answered 503 (adstudio.db.outage)
        if happening == End(Ending.ACCESS_REVOKED):
            raise NotFound()  # as for anyone else who may not read it
        return Response(long_poll_page(run, after, happening))

    def handle_exception(self, exc):
        """An error is a JSON body in the API's one shape, even to a client that asked
        for an event stream."""
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return super().handle_exception(exc)


class RunEventStreamView(RunEventsView):
    """A run's events as Server-Sent Events, whatever the client accepts."""

    renderer_classes = [EventStreamRenderer, JSONRenderer]

    @extend_schema(
        parameters=[
            AFTER_PARAMETER,
            OpenApiParameter(
                "Last-Event-ID",
                SEQUENCE_HEADER_SCHEMA,
                location=OpenApiParameter.HEADER,
                description="Resume after this event (it takes precedence over `after`), "
                "as a reconnecting EventSource sends it.",
            ),
        ],
        responses={
            (200, "text/event-stream"): ServerSentEventSerializer,
            204: OpenApiResponse(
                description="The run has finished and no event comes after the one asked "
                "for: an EventSource stops reconnecting."
            ),
        },
        summary="A run's progress events as Server-Sent Events",
    )
    def get(self, request: Request, pk):
        run = get_object_or_404(runs_for(request.user), pk=pk)
        after = sequence_param(request.query_params.get("after", "0"), "after")
        wait = seconds_param(request, "wait", settings.ADSTUDIO_MAX_WAIT_SECONDS)
        return _stream_response(request, run, after=after, wait=wait)


def access_revoked(run_id) -> str:
    """A stream's last words when its reader may no longer read the run: an ``error``
    event (an EventSource that reconnects then gets 404, and stops)."""
    logger.info("stream of run %s ended: its reader lost access", run_id)
    data = json.dumps({"code": "access_revoked", "message": REVOKED_MESSAGE})
    return f"event: error\ndata: {data}\n\n"


def events_page(events: list[RunEvent], run_status: str, after: int) -> dict:
    return {
        "runStatus": run_status,
        "events": EventSerializer(events, many=True).data,
        "lastSeq": events[-1].seq if events else after,
    }


def _waiting_once(after: int, wait: float) -> dict:
    """A long poll follows its run for one wait: it answers with the first news
    (``_news``: events, or none when the wait ended)."""
    return {"after": after, "duration": wait, "keepalive": wait}


def _news(happening: Happening) -> bool:
    """What a long poll answers with: anything but a keep-alive. Within its wait a
    keep-alive is an access re-check that found the reader still allowed (anyone's
    change, or the listener reconnecting, has every wait check): the poll waits on, and
    its reads then see the database as it is, gone or not. The wait's end comes as
    ``End(DEADLINE)``."""
    return not isinstance(happening, KeepAlive)


def long_poll_page(run: Run, after: int, happening: Happening) -> dict:
    """The long poll's page for the first news its follow yielded. Under ASGI its 200 is
    out when the database or the reader's access goes: the page says so, whole and in its
    shape (what was read for a reader who lost access is not sent)."""
    match happening:
        case Events(events=events, run_status=run_status):
            return events_page(events, run_status, after)
        case End(why=Ending.DATABASE_GONE):
            logger.warning("long poll of run %s ended: the database did not answer", run.pk)
            message = "The database did not answer: ask again in a few seconds."
            error = {"code": "database_unavailable", "message": message}
        case End(why=Ending.ACCESS_REVOKED):
            error = {"code": "access_revoked", "message": REVOKED_MESSAGE}
        case _:  # the wait ended with nothing new, or the run finished before it
            return events_page([], run.status, after)
    return {**events_page([], run.status, after), "error": error}


def _long_poll_response(
    run: Run, *, after: int, wait: float, slot: StreamSlot, reader: ReaderAccess
) -> StreamingHttpResponse:
    """A ``?wait=`` page under ASGI: the view returns at once, and a coroutine waits for
    the run's events without a thread, then sends the page the synchronous path renders
    (the status, 200, goes out first)."""

    async def page() -> AsyncIterator[bytes]:
        async with aclosing(follow_run(run, **_waiting_once(after, wait), reader=reader)) as follow:
            async for happening in follow:
                if _news(happening):
                    break
        yield JSONRenderer().render(long_poll_page(run, after, happening))

    release_connection()
    response = StreamingHttpResponse(
        AsyncHeldStream(page(), slot), content_type=JSONRenderer.media_type
    )
    response["Cache-Control"] = "no-cache"
    return response


def _stream_response(request: Request, run: Run, *, after: int, wait: float):
    # A browser's EventSource reconnects to the same URL, saying in this header the last
    # event it has: it resumes there, not at the URL's ``after``.
    last_event_id = request.headers.get("Last-Event-ID")
    if last_event_id is not None:
        after = sequence_param(last_event_id, "Last-Event-ID")
    if run.status in RunStatus.finished() and not run.events.filter(seq__gt=after).exists():
        # Nothing more will come. An EventSource reconnects whenever a stream ends, and
        # stops only on a 204.
        return no_content()
    slot = take_stream_slot(request.user)
    return _event_stream(
        run,
        after=after,
        duration=wait or settings.ADSTUDIO_MAX_WAIT_SECONDS,
        slot=slot,
        reader=ReaderAccess(request.user, run.pk),
        asynchronous=isinstance(request._request, ASGIRequest),
    )


def no_content() -> HttpResponse:
    """204, with no body and so no content type (Django's default would say HTML)."""
    response = HttpResponse(status=status.HTTP_204_NO_CONTENT)
    del response["Content-Type"]
    return response


def sequence_param(raw: str, name: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError({name: "Must be an integer."}) from None
    if value < 0:
        raise ValidationError({name: "Must be 0 or more."})
    return value


def _event_stream(
    run: Run,
    *,
    after: int,
    duration: float,
    slot: StreamSlot,
    reader: ReaderAccess,
    asynchronous: bool = False,
) -> StreamingHttpResponse:
    """SSE: every event as it is appended, until the run finished and all its events were
    sent, or ``duration`` seconds pass (the client reconnects with Last-Event-ID, after
    ``IDLE_RETRY_MS`` when nothing came: a stream that only waited asks for less).

    Served under ASGI (``asynchronous``) the body is a coroutine's: it waits for the run's
    events without a thread, and each read borrows one for its query. Under WSGI the
    server's thread runs the body, and waits in it."""
    body = EventStreamBody(run, after=after, duration=duration, reader=reader)
    # The stream reads with connections of its own, each borrowed for one query: the
    # view's goes back to the pool now, not when the stream ends.
    release_connection()
    if asynchronous:
        content = AsyncHeldStream(body.chunks_async(), slot)
    else:
        content = HeldStream(body.chunks(), slot)
    response = StreamingHttpResponse(content, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def server_sent(event: RunEvent) -> str:
    """The event as Server-Sent Event text, made once per event object: the streams of a
    run that share a read (``events.reads``) share the text too."""
    text = event.__dict__.get("_server_sent")
    if text is None:
        data = json.dumps(EventSerializer(event).data, default=str)
        text = event.__dict__["_server_sent"] = (
            f"id: {event.seq}\nevent: {event.type}\ndata: {data}\n\n"
        )
    return text


class EventStreamBody:
    """One event stream's text: what following its run yields (``events.follow``), said as
    Server-Sent Events, from an ASGI coroutine or a WSGI thread."""

    def __init__(self, run: Run, *, after: int, duration: float, reader: ReaderAccess) -> None:
        self.run = run
        self.follow = {"after": after, "duration": duration, "reader": reader}
        self.sent = False

    def chunks(self) -> Iterator[str]:
        yield "retry: 1000\n\n"
        for happening in follow_run_sync(self.run, **self.follow):
            yield from self._text(happening)

    async def chunks_async(self) -> AsyncIterator[str]:
        yield "retry: 1000\n\n"
        async for happening in follow_run(self.run, **self.follow):
            for chunk in self._text(happening):
                yield chunk

    def _text(self, happening: Happening) -> Iterator[str]:
        match happening:
            case Events(events=events):
                self.sent = True
                for event in events:
                    yield server_sent(event)
            case KeepAlive():
                yield ": keep-alive\n\n"
            case End(why=Ending.DATABASE_GONE):
                yield database_gone("event stream", self.run.pk)
            case End(why=Ending.ACCESS_REVOKED):
                yield access_revoked(self.run.pk)
            case End(why=Ending.DEADLINE) if not self.sent:
                # An idle stream: its EventSource comes back later, not at once.
                yield f": idle\nretry: {IDLE_RETRY_MS}\n\n"
