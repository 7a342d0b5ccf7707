"""Access re-checked while a stream is open: a member removed from the workspace (or an
account deactivated) loses an open event stream, UI message stream and long poll at the
next wake-up, which the change itself causes (a PostgreSQL notification); between
changes, a wake-up checks a counter and makes no query."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from django.db import connection

from accounts.services import token_create
from conversations.events.access import ReaderAccess
from conversations.events.wakeups import run_wakeups
from conversations.models import Conversation, Run, RunEvent
from tests.support.web import WebServer
from tests.support.worker import database_url
from workspaces.models import Membership

pytestmark = pytest.mark.django_db(transaction=True)


def _wait_for(condition, what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def member_run(make_ad, other_user):
    """A run of an ad in a workspace ``other_user`` is a viewer of."""
    ad = make_ad()
    membership = Membership.objects.create(workspace=ad.workspace, user=other_user, role="viewer")
    run = Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="x")
    return run, membership


def _listening() -> None:
    with run_wakeups.waiter("none"):  # starts this process's listener
        _wait_for(run_wakeups.listening.is_set, "the wake-up listener")


def test_a_removed_member_is_refused_at_the_next_check(
    member_run, other_user, django_assert_num_queries
):
    run, membership = member_run
    _listening()
    reader = ReaderAccess(other_user, run.pk)
    with django_assert_num_queries(0):  # no access change heard: a counter, no query
        assert reader.allowed()

    before = run_wakeups.access_generation(other_user.pk)
    membership.delete()
    _wait_for(lambda: run_wakeups.access_generation(other_user.pk) != before, "the notification")

    assert not reader.allowed()


def test_another_readers_change_costs_this_reader_no_query(
    member_run, make_ad, user, other_user, django_user_model, django_assert_num_queries
):
    run, _membership = member_run
    _listening()
    reader = ReaderAccess(other_user, run.pk)
    third = django_user_model.objects.create_user(username="carol", password="pw-carol-123")
    extra = Membership.objects.create(
        workspace=run.conversation.ad.workspace, user=third, role="viewer"
    )
    before = run_wakeups.access_generation(third.pk)

    extra.delete()
    _wait_for(lambda: run_wakeups.access_generation(third.pk) != before, "the notification")

    with django_assert_num_queries(0):
        assert reader.allowed()


def test_a_deactivated_account_and_a_role_change_are_checked_again(member_run, other_user):
    run, membership = member_run
    _listening()
    reader = ReaderAccess(other_user, run.pk)
    before = run_wakeups.access_generation(other_user.pk)

    membership.role = "editor"  # more access: checked again, still allowed
    membership.save()
    _wait_for(lambda: run_wakeups.access_generation(other_user.pk) != before, "the notification")
    assert reader.allowed()

    before = run_wakeups.access_generation(other_user.pk)
    other_user.is_active = False
    other_user.save()
    _wait_for(lambda: run_wakeups.access_generation(other_user.pk) != before, "the notification")
    assert not reader.allowed()


@pytest.mark.slow
def test_open_streams_of_a_removed_member_end_at_once_saying_why(member_run, other_user, tmp_path):
    run, membership = member_run
    _, token = token_create(user=other_user)
    web = WebServer(
        env={"DATABASE_URL": database_url(), "DEBUG": "0"},
        log=tmp_path / "web.log",
        asgi=True,
    ).start(ready_path="/healthz")
    try:
        ends = asyncio.run(_follow_then_remove(web, token, run, membership))
        reopened = httpx.get(
            f"{web.base}/api/runs/{run.pk}/events/stream",
            headers={"Authorization": f"Token {token}"},
            timeout=10,
        )
    finally:
        web.stop()

    log = web.log.read_text()
    stream, ui_stream, long_poll = ends["values"]
    # Each saw the first event, ended within a wake-up of the removal, and never got the
    # event committed after it.
    assert stream[0] == ["event: text"] and stream[1]["code"] == "access_revoked", log[-3000:]
    assert ui_stream[0] and ui_stream[1] == {
        "type": "error",
        "errorText": "You may no longer read this run.",
    }
    assert long_poll["error"]["code"] == "access_revoked" and long_poll["events"] == []
    assert max(ends["seconds"]) < 5, ends["seconds"]
    assert reopened.status_code == 404


def _commit_event(run: Run, seq: int) -> None:
    try:
        RunEvent.objects.create(run=run, seq=seq, type="text", data={"delta": f"part {seq}"})
    finally:
        connection.close()


def _remove(membership: Membership) -> None:
    try:
        membership.delete()
    finally:
        connection.close()


async def _follow_then_remove(web: WebServer, token: str, run: Run, membership: Membership):
    headers = {"Authorization": f"Token {token}"}
    first_seen = asyncio.Event()
    removed_at: list[float] = []
    seconds: list[float] = []

    async def stream(client: httpx.AsyncClient):
        seen, ending = [], None
        url = f"/api/runs/{run.pk}/events/stream?wait=30"
        async with client.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200
            lines = response.aiter_lines()
            async for line in lines:
                if line == "event: text":
                    seen.append(line)
                    first_seen.set()
                if line == "event: error":
                    ending = json.loads((await anext(lines)).removeprefix("data: "))
        seconds.append(time.monotonic() - removed_at[0])
        return seen, ending

    async def ui_stream(client: httpx.AsyncClient):
        chunks = []
        url = f"/api/ads/{run.conversation.ad_id}/ui-chat/{run.conversation_id}/stream"
        async with client.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("data: {"):
                    chunks.append(json.loads(line.removeprefix("data: ")))
        seconds.append(time.monotonic() - removed_at[0])
        texts = [c for c in chunks if c.get("type") == "text-delta"]
        return texts, chunks[-1]

    async def long_poll(client: httpx.AsyncClient):
        await first_seen.wait()
        url = f"/api/runs/{run.pk}/events?after=1&wait=30"
        async with client.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200
            page = json.loads(await response.aread())
        seconds.append(time.monotonic() - removed_at[0])
        return page

    async with httpx.AsyncClient(base_url=web.base, timeout=30) as client:
        tasks = [asyncio.create_task(f(client)) for f in (stream, ui_stream, long_poll)]
        await asyncio.to_thread(_commit_event, run, 1)
        await asyncio.wait_for(first_seen.wait(), timeout=20)
        await asyncio.sleep(1.0)  # the long poll is open and waiting
        removed_at.append(time.monotonic())
        await asyncio.to_thread(_remove, membership)
        values = await asyncio.wait_for(asyncio.gather(*tasks), timeout=20)
        await asyncio.to_thread(_commit_event, run, 2)
    return {"values": values, "seconds": seconds}
