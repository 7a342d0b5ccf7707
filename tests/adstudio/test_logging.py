"""Logs a collector can read (``LOG_FORMAT=json``): one JSON object per line, each with the
ids of what it is about, so the web's and the worker's lines of one run join on its id."""

from __future__ import annotations

import io
import json
import logging

import pytest
from django.conf import settings
from django.utils.module_loading import import_string
from rest_framework.test import APIClient

from accounts.services import token_create
from adstudio.log_context import LogContextFilter, bind, log_scope
from conversations.models import Conversation, Run
from conversations.runs.enqueue import run_enqueue
from testbed.fake_openai import TEST_API_KEY, call, turn
from testbed.worker import WorkerProcess
from tests.support.settings_module import start_up_error
from tests.support.worker import LEAN_WORKER, database_url, wait_until_finished


@pytest.fixture
def json_lines():
    """What the root logger writes, formatted as ``LOG_FORMAT=json`` does: a callable
    returning the lines parsed."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    spec = dict(settings.LOGGING["formatters"]["json"])
    formatter_class = import_string(spec.pop("()"))
    handler.setFormatter(formatter_class(**spec))
    handler.addFilter(LogContextFilter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    root.removeHandler(handler)
    root.setLevel(level)


def test_a_scope_binds_its_ids_and_unbinds_them(json_lines):
    log = logging.getLogger("adstudio.test")
    with log_scope(run_id="r1"):
        log.info("inside")
        with log_scope(conversation_id="c1"):
            log.info("nested")
    log.info("outside")
    bind(run_id="r2")  # no scope around it: bound to nothing, so it cannot leak
    log.info("unbound")

    inside, nested, outside, unbound = json_lines()
    assert (inside["message"], inside["run_id"], inside["level"]) == ("inside", "r1", "INFO")
    assert "conversation_id" not in inside
    assert (nested["run_id"], nested["conversation_id"]) == ("r1", "c1")
    assert "run_id" not in outside and outside["logger"] == "adstudio.test"
    assert "run_id" not in unbound
    with pytest.raises(ValueError, match="unknown log fields"):
        log_scope(runid="typo").__enter__()


@pytest.mark.django_db(transaction=True)
def test_a_chat_requests_line_names_the_request_the_user_and_the_run(json_lines, user, make_ad):
    ad = make_ad()
    Conversation.objects.create(ad=ad)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")

    response = api.post(
        f"/api/ads/{ad.pk}/chat", {"message": "hi"}, format="json", HTTP_X_REQUEST_ID="lb-7f3a"
    )

    assert response.status_code == 202, response.content
    assert response["X-Request-ID"] == "lb-7f3a"
    (queued,) = [line for line in json_lines() if line["message"].endswith(" queued")]
    assert queued["request_id"] == "lb-7f3a"
    assert queued["user_id"] == str(user.pk)
    assert queued["run_id"] == response.json()["runId"]
    assert queued["ad_id"] == str(ad.pk)
    # An id that is not plain is replaced by one of ours.
    odd = api.post(f"/api/ads/{ad.pk}/chat", {"message": "again"}, HTTP_X_REQUEST_ID="a b\n")
    assert odd["X-Request-ID"] != "a b\n" and len(odd["X-Request-ID"]) == 32


@pytest.mark.slow
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_every_worker_line_of_a_run_is_json_with_its_ids(
    broker, broker_url, fake_openai, make_ad, make_voice, tmp_path
):
    voice = make_voice(language="en", gender="female", name="Rachel")
    ad = make_ad(language="en")
    fake_openai.script(
        turn(tool_calls=[call("search_voices", {"language": "en"})]),
        turn(tool_calls=[call("create_music_draft", {"musicPrompt": "calm piano"})]),
        turn("Music v1 is ready."),
    )
    worker = WorkerProcess(
        log_dir=tmp_path,
        quiet=True,  # no start-up banner between the JSON lines
        env={
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": broker_url,
            "OPENAI_API_KEY": TEST_API_KEY,
            "OPENAI_BASE_URL": fake_openai.base_url,
            "ADSTUDIO_OPENAI_MODEL": "fake-openai",
            "ADSTUDIO_PROVIDER_FALLBACKS": "",
            "LOG_FORMAT": "json",
            **LEAN_WORKER,
        },
    )
    worker.start()
    try:
        conversation = Conversation.objects.create(ad=ad)
        run = Run.objects.create(conversation=conversation, input_text="hi")
        run_enqueue(run_id=run.pk)
        wait_until_finished(run)
    finally:
        worker.stop()
    assert run.status == "succeeded", worker.log.read_text()[-3000:]

    # Every line is JSON, but for the notice Celery prints itself (not logs) on SIGTERM.
    output = worker.log.read_text().splitlines()
    assert [line for line in output if line.startswith("worker: ")] == [
        "worker: Warm shutdown (MainProcess)"
    ]
    lines = [json.loads(line) for line in output if line and not line.startswith("worker: ")]
    of_the_run = [line for line in lines if line["logger"].startswith(("httpx", "conversations"))]
    calls = [line for line in of_the_run if "/chat/completions" in line["message"]]
    assert len(calls) == 3  # the model's three replies, each a line of the run
    for line in of_the_run:
        if line["message"].startswith(("token encoding loaded", "provider adapters loaded")):
            continue  # logged at start-up, before any run
        assert line["run_id"] == str(run.pk), line
        assert line["conversation_id"] == str(conversation.pk), line
        assert line["ad_id"] == str(ad.pk), line
    assert any(line["message"].endswith(" ready.") for line in lines)
    assert voice.pk  # the catalogue the run searched


def test_an_unknown_log_format_is_a_start_up_error():
    error = start_up_error({"LOG_FORMAT": "xml"})
    assert "LOG_FORMAT='xml' is not a log format: use plain or json." in error
