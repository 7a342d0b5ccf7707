"""What each way of following a run sends for each thing that happens (events, a quiet
wait, the run's end, the deadline, a lost database, a reader who lost access), byte for
byte, and the same whether its body is a WSGI thread's or an ASGI coroutine's."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from django.db import OperationalError, connections
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services import token_create
from conversations.events import waits
from conversations.models import Conversation, Run, RunEvent
from conversations.web import events_api
from conversations.web.events_api import EventStreamBody, _long_poll_response
from conversations.web.ui_chat_api import _UIStreamBody

pytestmark = pytest.mark.django_db(transaction=True)  # an ASGI body reads in other threads

BODIES = ["wsgi", "asgi"]


class Reader:
    """A stream's reader whose access is decided by the test."""

    def __init__(self, allowed: bool = True) -> None:
        self._allowed = allowed

    def changed(self) -> bool:
        return False

    def allowed(self) -> bool:
        return self._allowed

    async def aallowed(self) -> bool:
        return self._allowed


class Slot:
    def renew(self) -> None:
        pass

    def give_back(self) -> None:
        pass


def _finished_run(ad) -> Run:
    run = Run.objects.create(
        conversation=Conversation.objects.create(ad=ad),
        input_text="hi",
        status="succeeded",
        stop_cause="final_answer",
        finished_at=timezone.now(),
    )
    RunEvent.objects.create(run=run, seq=1, type="text", data={"delta": "Hel"})
    RunEvent.objects.create(run=run, seq=2, type="text", data={"delta": "lo"})
    RunEvent.objects.create(
        run=run,
        seq=3,
        type="run.finished",
        data={"status": "succeeded", "stopCause": "final_answer", "errorCode": ""},
    )
    return run


@pytest.fixture
def finished_run(ad) -> Run:
    return _finished_run(ad)


@pytest.fixture
def quiet_run(make_ad) -> Run:
    """A run that has not started: no events."""
    conversation = Conversation.objects.create(ad=make_ad())
    return Run.objects.create(conversation=conversation, input_text="hi")


@pytest.fixture
def database_gone(monkeypatch):
    def lost(run_id, after):
        raise OperationalError("the connection was lost")

    monkeypatch.setattr(waits, "_events_after", lost)


def _text(body: str, sync_chunks, async_chunks) -> str:
    if body == "wsgi":
        return "".join(sync_chunks())

    async def read() -> str:
        return "".join([chunk async for chunk in async_chunks()])

    try:
        return asyncio.run(read())
    finally:
        connections.close_all()


def _sse(body: str, run: Run, *, duration: float = 5.0, reader=None) -> str:
    stream = EventStreamBody(run, after=0, duration=duration, reader=reader or Reader())
    return _text(body, stream.chunks, stream.chunks_async)


def _ui(body: str, run: Run, *, after: int = 0, reader=None) -> str:
    stream = _UIStreamBody(run, after=after, reader=reader or Reader())
    return _text(body, stream.chunks, stream.chunks_async)


def _event(run: Run, seq: int) -> str:
    """The stored event as Server-Sent Event text, written out by hand."""
    event = RunEvent.objects.get(run=run, seq=seq)
    created = event.created_at.isoformat().replace("+00:00", "Z")  # as DRF writes UTC
    fields = {"seq": seq, "type": event.type, "data": event.data, "created_at": created}
    return f"id: {seq}\nevent: {event.type}\ndata: {json.dumps(fields)}\n\n"


@pytest.mark.parametrize("body", BODIES)
def test_the_event_stream_of_a_finished_run_is_its_events(body, finished_run):
    assert _sse(body, finished_run) == (
        "retry: 1000\n\n" + "".join(_event(finished_run, seq) for seq in (1, 2, 3))
    )


@pytest.mark.parametrize("body", BODIES)
def test_a_quiet_event_stream_keeps_alive_then_ends_idle(body, quiet_run):
    assert _sse(body, quiet_run, duration=0.3) == (
        "retry: 1000\n\n: keep-alive\n\n: idle\nretry: 10000\n\n"
    )


@pytest.mark.parametrize("body", BODIES)
def test_an_event_stream_whose_reader_lost_access_says_so_and_nothing_else(body, finished_run):
    revoked = {"code": "access_revoked", "message": "You may no longer read this run."}
    assert _sse(body, finished_run, reader=Reader(allowed=False)) == (
        f"retry: 1000\n\nevent: error\ndata: {json.dumps(revoked)}\n\n"
    )


@pytest.mark.parametrize("body", BODIES)
def test_an_event_stream_that_lost_its_database_says_when_to_reconnect(
    body, finished_run, database_gone
):
    assert _sse(body, finished_run) == (
        "retry: 1000\n\n: the database did not answer; reconnect\nretry: 3000\n\n"
    )


def _ui_chunks(text: str) -> list:
    return [line.removeprefix("data: ") for line in text.split("\n") if line.startswith("data: ")]


def test_the_ui_stream_is_the_same_from_a_thread_and_a_coroutine(finished_run):
    wsgi, asgi = _ui("wsgi", finished_run), _ui("asgi", finished_run)

    assert wsgi == asgi
    assert wsgi.startswith("id: 1\ndata: {") and wsgi.endswith("data: [DONE]\n\n")
    chunks = [json.loads(chunk) for chunk in _ui_chunks(wsgi)[:-1]]
    assert [chunk["type"] for chunk in chunks] == [
        "start",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "finish",
    ]
    assert _ui("asgi", finished_run, after=4) == wsgi[wsgi.index("id: 5\n") :]


@pytest.mark.parametrize("body", BODIES)
def test_a_ui_stream_whose_reader_lost_access_ends_with_an_error_chunk(body, finished_run):
    text = _ui(body, finished_run, reader=Reader(allowed=False))

    assert [json.loads(chunk)["type"] for chunk in _ui_chunks(text)] == ["start", "error"]
    assert text.endswith(
        'data: {"type": "error", "errorText": "You may no longer read this run."}\n\n'
    )


@pytest.mark.parametrize("body", BODIES)
def test_a_ui_stream_that_lost_its_database_ends_without_done(body, finished_run, database_gone):
    text = _ui(body, finished_run)

    assert text.endswith("\n\n: the database did not answer; reconnect\nretry: 3000\n\n")
    assert "[DONE]" not in text


def _long_poll(run: Run, *, after: int = 0, wait: float = 5.0, reader=None) -> dict:
    response = _long_poll_response(
        run, after=after, wait=wait, slot=Slot(), reader=reader or Reader()
    )

    async def read() -> bytes:
        return b"".join([chunk async for chunk in response.streaming_content])

    try:
        return json.loads(asyncio.run(read()))
    finally:
        connections.close_all()


def test_a_long_poll_answers_with_the_events_there_are(finished_run):
    page = _long_poll(finished_run, after=1)

    assert page["runStatus"] == "succeeded" and page["lastSeq"] == 3
    assert [event["seq"] for event in page["events"]] == [2, 3]


def test_a_long_poll_that_waited_in_vain_is_an_empty_page(quiet_run):
    assert _long_poll(quiet_run, after=0, wait=0.3) == {
        "runStatus": "queued",
        "events": [],
        "lastSeq": 0,
    }


class ReaderStillAllowed(Reader):
    """A reader whose wait an access change cut short once (another reader's, or the
    wake-up listener reconnecting): the re-check finds them still allowed."""

    def __init__(self) -> None:
        super().__init__(allowed=True)
        self.heard = 1

    def changed(self) -> bool:
        heard, self.heard = self.heard > 0, 0
        return heard


def test_a_long_poll_waits_on_after_a_recheck_that_found_its_reader_allowed(quiet_run):
    """Not an empty page at once: its next read would not have seen a database going."""
    started = time.monotonic()
    page = _long_poll(quiet_run, after=0, wait=0.6, reader=ReaderStillAllowed())

    assert time.monotonic() - started >= 0.6
    assert page == {"runStatus": "queued", "events": [], "lastSeq": 0}


def test_a_long_poll_served_by_a_thread_waits_on_after_such_a_recheck(api, quiet_run, monkeypatch):
    monkeypatch.setattr(events_api, "ReaderAccess", lambda user, run_id: ReaderStillAllowed())
    started = time.monotonic()

    response = api.get(f"/api/runs/{quiet_run.pk}/events?after=0&wait=0.6")

    assert time.monotonic() - started >= 0.6
    assert response.json() == {"runStatus": "queued", "events": [], "lastSeq": 0}


@pytest.mark.parametrize(
    ("reader", "code"),
    [(Reader(allowed=False), "access_revoked"), (None, "database_unavailable")],
    ids=["access revoked", "database gone"],
)
def test_a_long_poll_cut_short_says_why_in_the_pages_shape(finished_run, monkeypatch, reader, code):
    if code == "database_unavailable":
        monkeypatch.setattr(waits, "_events_after", _lost)
    page = _long_poll(finished_run, after=1, reader=reader)

    assert page["events"] == [] and page["lastSeq"] == 1 and page["runStatus"] == "succeeded"
    assert page["error"]["code"] == code


def _lost(run_id, after):
    raise OperationalError("the connection was lost")


@pytest.fixture
def api(user) -> APIClient:
    client = APIClient()  # serves a view as WSGI does: in this thread
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    return client


def test_a_long_poll_served_by_a_thread_answers_the_same_pages(api, finished_run, quiet_run):
    answered = api.get(f"/api/runs/{finished_run.pk}/events?after=1&wait=5")
    waited = api.get(f"/api/runs/{quiet_run.pk}/events?after=0&wait=0.3")

    assert answered.json() == _long_poll(finished_run, after=1)
    assert waited.json() == _long_poll(quiet_run, after=0, wait=0.3)


def test_a_long_poll_served_by_a_thread_refuses_a_reader_who_lost_access(
    api, finished_run, monkeypatch
):
    """Its status is not out yet: 404, as for anyone else who may not read the run."""
    monkeypatch.setattr(events_api, "ReaderAccess", lambda user, run_id: Reader(allowed=False))

    response = api.get(f"/api/runs/{finished_run.pk}/events?after=1&wait=5")

    assert response.status_code == 404


def test_a_long_poll_served_by_a_thread_that_lost_its_database_is_a_503(
    api, finished_run, database_gone
):
    response = api.get(f"/api/runs/{finished_run.pk}/events?after=1&wait=5")

    assert response.status_code == 503 and response["Retry-After"]
    assert response.json()["error"]["code"] == "database_unavailable"
