"""PostgreSQL crashes and restarts under a real worker and web server, on a server of
the test's own.

The server (``tests.support.postgres``) is killed outright a moment after the worker
committed a step: whatever PostgreSQL had acknowledged must survive, and the worker,
never killed itself, must end the run over the history the database holds, not over
what it remembers. Everything here talks to the private server through subprocesses and
plain SQL; the suite's own database is not used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
import psycopg
import pytest

from testbed.fake_openai import TEST_API_KEY, Turn, call
from testbed.worker import WorkerProcess
from tests.support.fixtures import PRIVATE_DATABASE
from tests.support.postgres import PostgresServer, user_token
from tests.support.web import WebServer
from tests.support.worker import LEAN_WORKER, ROOT, RedisServer

pytestmark = [pytest.mark.slow, pytest.mark.worker]

DATABASE = PRIVATE_DATABASE


def manage(*args: str, env: dict[str, str], timeout: float = 120) -> str:
    environment = {**os.environ, **env}
    environment.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture
def stack(private_postgres, fake_openai, tmp_path):
    """A Redis and a worker of their own, both on ``private_postgres``."""
    redis = RedisServer(log_dir=tmp_path)
    redis.start()
    env = {
        "DATABASE_URL": private_postgres.url(DATABASE),
        "CELERY_BROKER_URL": redis.url,
        "OPENAI_API_KEY": TEST_API_KEY,
        "OPENAI_BASE_URL": fake_openai.base_url,
        "ADSTUDIO_OPENAI_MODEL": "fake-openai",
        "ADSTUDIO_PROVIDER_FALLBACKS": "",
        "ADSTUDIO_HEARTBEAT_INTERVAL": "0.5",
        **LEAN_WORKER,
    }
    worker = WorkerProcess(log_dir=tmp_path, env=env, name="crash", forked=True)
    worker.start()
    yield env, worker
    worker.kill()  # nothing is asserted after the test: no warm shutdown to wait for
    redis.stop()


def generate_in_shell(env: dict[str, str]) -> str:
    """A new ad and its generation, as the API would start it (stored, then enqueued)."""
    code = (
        "import uuid; from django.contrib.auth.models import User; "
        "from drafts.services import ad_create; "
        "from conversations.run_request import RunRequest; "
        "from conversations.services import brief_send; "
        "owner = User.objects.create(username=uuid.uuid4().hex); "
        "ad = ad_create(owner=owner, client='Spotify Premium family plan', language='en'); "
        "print(brief_send(request=RunRequest(ad=ad)).pk)"
    )
    return manage("shell", "--no-imports", "-c", code, env=env).strip()


def query(server: PostgresServer, sql: str, *params) -> list[tuple]:
    with psycopg.connect(server.url(DATABASE)) as connection:
        return connection.execute(sql, params).fetchall()


STEPS = [
    Turn(tool_calls=(call("create_music_draft", {"prompt": "warm acoustic pop"}),)),
    Turn(tool_calls=(call("create_sfx_draft", {"prompts": [{"description": "soft whoosh"}]}),)),
    Turn(text="Music v1 and sound effects v1 are ready."),
]


@pytest.mark.parametrize(
    "crash_at",
    [1, 2, 3],
    ids=["after-the-claim", "after-the-music-step", "after-the-sfx-step"],
)
def test_a_crash_right_after_a_step_commits_loses_nothing(
    private_postgres, stack, fake_openai, crash_at
):
    """Request N reaches the model the moment the worker has committed the step before it
    (the claim and the user message, then each tool step); the server is killed then and
    started again before the model answers."""
    env, worker = stack
    crashed = threading.Event()

    def director(body: dict) -> Turn:
        number = len(fake_openai.requests)
        if number == crash_at and not crashed.is_set():
            private_postgres.crash()
            private_postgres.start()
            crashed.set()
        return STEPS[min(number, len(STEPS)) - 1]

    fake_openai.responder = director
    run_id = generate_in_shell(env)

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        try:
            rows = query(
                private_postgres, "SELECT status FROM conversations_run WHERE id = %s", run_id
            )
        except psycopg.OperationalError:  # the server is down for the crash
            rows = []
        if rows and rows[0][0] in ("succeeded", "failed", "cancelled"):
            break
        time.sleep(0.2)

    assert crashed.is_set()
    run = query(
        private_postgres,
        "SELECT status, error_code, final_message, input_text, conversation_id "
        "FROM conversations_run WHERE id = %s",
        run_id,
    )[0]
    assert run[:3] == ("succeeded", "", "Music v1 and sound effects v1 are ready."), (
        run,
        worker.log.read_text()[-3000:],
    )
    rows = query(
        private_postgres,
        "SELECT seq, role, text, tool_calls, tool_call_id FROM conversations_message "
        "WHERE conversation_id = %s ORDER BY seq",
        run[4],
    )
    assert [seq for seq, *_ in rows] == list(range(1, len(rows) + 1))
    assert [role for _, role, *_ in rows] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]
    assert rows[0][2] == run[3]  # the brief, the user's message
    open_calls: Counter = Counter()
    for _, role, _, tool_calls, call_id in rows:
        if role == "tool":
            assert open_calls.pop(call_id) == 1
        else:
            assert not open_calls
            open_calls = Counter(c["id"] for c in tool_calls)
    results = [json.loads(text) for _, role, text, *_ in rows if role == "tool"]
    assert [(r["kind"], r["versionId"]) for r in results] == [("music", "v1"), ("sfx", "v1")]
    drafts = query(
        private_postgres,
        "SELECT kind, version FROM drafts_draft WHERE run_id = %s ORDER BY kind",
        run_id,
    )
    assert drafts == [("music", 1), ("sfx", 1)]  # what the answer reports exists
    finishes = query(
        private_postgres,
        "SELECT count(*) FROM conversations_runevent WHERE run_id = %s AND type = 'run.finished'",
        run_id,
    )
    assert finishes == [(1,)]


@pytest.fixture
def web(private_postgres, tmp_path):
    """gunicorn as README runs it (one process, 32 threads), on ``private_postgres``;
    yields its base URL, a user's token, and its log."""
    token = user_token(private_postgres.url(DATABASE))
    server = WebServer(
        env={"DATABASE_URL": private_postgres.url(DATABASE)},
        log=tmp_path / "gunicorn.log",
        threads=32,
    ).start()
    try:
        yield server.base, token, server.log
    finally:
        server.stop()


def test_after_a_restart_requests_get_a_live_connection_at_once(private_postgres, web):
    """40 concurrent requests leave the web process's pool full of connections; the
    server restarts; then one request a second. Each answers 200, within a couple of
    seconds: the first dead connection found has the pool drop all the others."""
    base, token, log = web
    headers = {"Authorization": f"Token {token}"}

    def ads() -> httpx.Response:
        return httpx.get(f"{base}/api/ads/", headers=headers, timeout=60)

    with ThreadPoolExecutor(max_workers=40) as pool:
        assert {r.status_code for r in pool.map(lambda _: ads(), range(40))} == {200}
    private_postgres.restart()

    answers = []
    for _ in range(8):
        started = time.monotonic()
        response = ads()
        answers.append((response.status_code, round(time.monotonic() - started, 1)))
        time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))

    assert [status for status, _ in answers] == [200] * 8, (answers, log.read_text()[-3000:])
    assert max(seconds for _, seconds in answers) < 5, answers
