"""Event streams served as in production (gunicorn with uvicorn's ASGI workers): a stream
or a long poll holds no thread while it waits, so many open ones leave /healthz and the API
answering at once, and each still receives its run's events as they are committed."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from django.db import connection
from django.utils import timezone

from accounts.services import token_create
from conversations.models import Conversation, Run, RunEvent
from tests.support.web import WebServer
from tests.support.worker import database_url

STREAMS = 80  # gunicorn's gthread served as many streams as it had threads (16 here)
LONG_POLLS = 20


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_many_open_streams_hold_no_thread_and_each_receives_the_event(user, make_ad, tmp_path):
    run = Run.objects.create(conversation=Conversation.objects.create(ad=make_ad()), input_text="x")
    token = token_create(user=user)[1]
    web = WebServer(
        env={
            "DATABASE_URL": database_url(),
            "DEBUG": "0",
            "ADSTUDIO_MAX_STREAMS_PER_USER": str(STREAMS + LONG_POLLS + 5),
        },
        log=tmp_path / "web.log",
        asgi=True,
    ).start(ready_path="/healthz")
    try:
        idle_threads = web.thread_count()
        received, polled, health_ms, waiting_threads = asyncio.run(
            _follow_and_probe(web, token, run)
        )
    finally:
        web.stop()

    log = web.log.read_text()
    assert received == [True] * STREAMS, log[-3000:]
    assert polled == [[1]] * LONG_POLLS, log[-3000:]
    # A hundred requests waiting, a handful of threads more than an idle server's (those
    # of the pools that read for them), not one each.
    assert waiting_threads - idle_threads < 20, (idle_threads, waiting_threads)
    # Answered, not queued behind the streams (gunicorn's gthread never answered them all);
    # the figures themselves are benchmarks.streams'.
    assert max(health_ms) < 2000, health_ms


def _append_event(run: Run) -> None:
    """The run's next event, committed from a thread that then closes its connection."""
    try:
        RunEvent.objects.create(run=run, seq=1, type="text", data={"delta": "Hi"})
    finally:
        connection.close()


async def _follow_and_probe(
    web: WebServer, token: str, run: Run
) -> tuple[list[bool], list[list[int]], list[float], int]:
    headers = {"Authorization": f"Token {token}", "Accept": "text/event-stream"}
    limits = httpx.Limits(max_connections=STREAMS + LONG_POLLS + 5, max_keepalive_connections=0)
    opened = asyncio.Semaphore(0)

    async def follow(client: httpx.AsyncClient) -> bool:
        url = f"/api/runs/{run.pk}/events/stream?wait=30"
        async with client.stream("GET", url, headers=headers) as response:
            assert response.status_code == 200
            opened.release()
            async for line in response.aiter_lines():
                if line == "event: text":
                    return True
        return False

    async def long_poll(client: httpx.AsyncClient) -> list[int]:
        url = f"/api/runs/{run.pk}/events?wait=30"
        async with client.stream("GET", url, headers={"Authorization": f"Token {token}"}) as r:
            assert r.status_code == 200
            opened.release()
            page = json.loads(await r.aread())
        return [event["seq"] for event in page["events"]]

    async with httpx.AsyncClient(base_url=web.base, limits=limits, timeout=30) as client:
        followers = [asyncio.create_task(follow(client)) for _ in range(STREAMS)]
        pollers = [asyncio.create_task(long_poll(client)) for _ in range(LONG_POLLS)]
        for _ in range(STREAMS + LONG_POLLS):
            await asyncio.wait_for(opened.acquire(), timeout=30)
        health_ms = []
        for _ in range(20):  # every stream open and waiting
            started = time.monotonic()
            assert (await client.get("/healthz")).status_code == 200
            health_ms.append((time.monotonic() - started) * 1000)
            await asyncio.sleep(0.05)
        waiting_threads = web.thread_count()
        await asyncio.to_thread(_append_event, run)
        received = await asyncio.wait_for(asyncio.gather(*followers), timeout=30)
        polled = await asyncio.wait_for(asyncio.gather(*pollers), timeout=30)
    return list(received), list(polled), health_ms, waiting_threads


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_ui_chat_stream_resumed_under_asgi_follows_the_run_to_its_end(user, make_ad, tmp_path):
    conversation = Conversation.objects.create(ad=make_ad())
    run = Run.objects.create(conversation=conversation, input_text="x")
    token = token_create(user=user)[1]
    web = WebServer(
        env={"DATABASE_URL": database_url(), "DEBUG": "0"},
        log=tmp_path / "web.log",
        asgi=True,
    ).start(ready_path="/healthz")
    try:
        lines = asyncio.run(_resume_ui_chat(web.base, token, conversation, run))
    finally:
        web.stop()

    data = [line.removeprefix("data: ") for line in lines if line.startswith("data: ")]
    assert any('"delta":"Hi"' in item.replace(" ", "") for item in data), lines
    assert data[-1] == "[DONE]", lines


async def _resume_ui_chat(base: str, token: str, conversation, run: Run) -> list[str]:
    headers = {"Authorization": f"Token {token}"}  # as the AI SDK's transport resumes
    url = f"/api/ads/{conversation.ad_id}/ui-chat/{conversation.pk}/stream"
    lines: list[str] = []
    async with (
        httpx.AsyncClient(base_url=base, timeout=30) as client,
        client.stream("GET", url, headers=headers) as response,
    ):
        assert response.status_code == 200
        await asyncio.to_thread(_finish_with_text, run)
        async for line in response.aiter_lines():
            lines.append(line)
            if line == "data: [DONE]":
                break
    return lines


def _finish_with_text(run: Run) -> None:
    """The run's text and its end, committed as a worker commits them."""
    try:
        RunEvent.objects.create(run=run, seq=1, type="text", data={"delta": "Hi"})
        Run.objects.filter(pk=run.pk).update(status="succeeded", finished_at=timezone.now())
        RunEvent.objects.create(
            run=run,
            seq=2,
            type="run.finished",
            data={"status": "succeeded", "stopCause": "final_answer", "errorCode": ""},
        )
    finally:
        connection.close()
