"""The web client's real packages against a live server: the AI SDK's chat transport and
validators (`ai` 6), a TypeScript client generated from /api/schema/ (openapi-typescript,
openapi-fetch, `tsc`) and a real EventSource (`eventsource`).

The server is the suite's shared gunicorn and Celery worker on the test database, with
the local OpenAI-compatible server as the provider. Node scripts in this folder drive it and assert
on what they get; the packages come from package-lock.json (`npm ci`, run here when
node_modules is missing or older than the lockfile).
"""

from __future__ import annotations

import json
import os
import subprocess
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from accounts.services import token_create
from conversations.models import Run
from conversations.run_request import RunRequest
from conversations.services import brief_send, send_message
from tests.clients.directors import director, history_director
from tests.support.worker import ROOT, wait_until_finished

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

HERE = Path(__file__).resolve().parent


@pytest.fixture
def live(web_stack, user):
    """The shared server and a user's token, the provider scripted by ``director``."""
    web_stack.fake_openai.responder = director
    return {"BASE": web_stack.base, "TOKEN": token_create(user=user)[1]}


def run_node(node: str, script: str, env: dict[str, str], timeout: float = 120) -> dict:
    result = subprocess.run(
        [node, script],
        cwd=HERE,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"{script}:\n{result.stdout}\n{result.stderr}"
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_use_chats_transport_sends_reads_and_resumes(node, live, make_ad):
    ad = make_ad(language="en")
    generation = wait_until_finished(brief_send(request=RunRequest(ad=ad)))
    assert generation.status == "succeeded"

    out = run_node(
        node,
        "transport.mjs",
        {**live, "AD_ID": str(ad.pk), "CHAT_ID": str(generation.conversation_id)},
    )

    runs = list(Run.objects.filter(conversation=generation.conversation).order_by("created_at"))
    assert [r.input_text for r in runs[1:]] == [
        "make the music more upbeat",
        "make it even more upbeat",
    ]
    assert all(r.status == "succeeded" for r in runs)
    assert out["resumed"] == f"run-{runs[2].pk}"  # the run the dropped stream was following


def test_the_sdks_validators_accept_a_real_conversation(node, live, make_ad):
    ad = make_ad(language="en")
    run = wait_until_finished(brief_send(request=RunRequest(ad=ad)))
    for text in ("Use voice 999", "make the music more upbeat"):
        run = wait_until_finished(
            send_message(request=RunRequest(conversation=run.conversation, text=text))
        )
        assert run.status == "succeeded"

    out = run_node(node, "validate.mjs", {**live, "AD_ID": str(ad.pk)})

    assert out["ui"] == 6  # the brief and two user messages, three replies
    assert out["model"] > out["ui"]  # tool messages are their own there
    assert out["states"].count("output-error") == 1


def test_the_history_is_what_a_use_chat_page_holds(node, web_stack, user, make_ad):
    web_stack.fake_openai.responder = history_director()
    ad = make_ad(language="en")
    live = {"BASE": web_stack.base, "TOKEN": token_create(user=user)[1]}

    out = run_node(node, "history.mjs", {**live, "AD_ID": str(ad.pk)})

    runs = list(Run.objects.filter(conversation__ad=ad).order_by("created_at"))
    assert [r.status for r in runs] == [
        "succeeded",
        "succeeded",
        "failed",
        "cancelled",
        "succeeded",
        "succeeded",
    ]
    assert out["replaced"] == f"run-{runs[4].pk}" and runs[5].replaces_id == runs[4].pk
    assert out["ids"][-1] == f"run-{runs[5].pk}" and out["replaced"] not in out["ids"]
    assert out["ids"][0] == "client-0"  # the client's own message ids
    assert out["statuses"] == ["succeeded", "succeeded", "failed", "cancelled", "succeeded"]
    # The model answering again was not shown the reply it replaces, nor the message twice.
    regenerated = web_stack.fake_openai.requests[-1]["messages"]
    said = [m.get("content") for m in regenerated]
    assert "Plain answer number 1." not in said
    assert said.count("plain: one line") == 1


def test_a_generated_typescript_client_type_checks_and_runs_the_story(node, live):
    npx = HERE / "node_modules" / ".bin"
    schema = subprocess.run(
        [str(npx / "openapi-typescript"), f"{live['BASE']}/api/schema/", "-o", "schema.d.ts"],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert schema.returncode == 0, schema.stdout + schema.stderr
    build = subprocess.run(  # type-checked as it is built: tsc fails on any error
        [str(npx / "tsc"), "-p", "tsconfig.json"],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr

    out = run_node(node, "build/story.js", live)

    assert out["music"]["active"] == "v2"


def test_the_chat_types_module_is_current_and_types_a_use_chat_page(node, live, make_ad):
    """clients/adstudio-chat.ts is what `make chat-types` makes of the server's models, and
    with the client generated from /api/schema/ it types a page's history, stream and
    parts with no cast (chat.ts, `tsc`), which then runs against the server."""
    schema = StringIO()
    call_command("chat_types", stdout=schema)
    generated = subprocess.run(
        [node, "chat-types.mjs"],
        cwd=HERE,
        input=schema.getvalue(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert generated.returncode == 0, generated.stderr
    published = (ROOT / "clients" / "adstudio-chat.ts").read_text()
    assert generated.stdout == published, "clients/adstudio-chat.ts is stale: make chat-types"

    npx = HERE / "node_modules" / ".bin"
    for command in (
        [npx / "openapi-typescript", f"{live['BASE']}/api/schema/", "-o", "chat-schema.d.ts"],
        [npx / "tsc", "-p", "tsconfig.chat.json"],
    ):
        result = subprocess.run(
            [str(part) for part in command], cwd=HERE, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, result.stdout + result.stderr

    ad = make_ad(language="en")
    assert wait_until_finished(brief_send(request=RunRequest(ad=ad))).status == "succeeded"
    out = run_node(node, "build-chat/tests/clients/chat.js", {**live, "AD_ID": str(ad.pk)})

    assert out["before"][0][0].startswith("text: Brief\n")  # the generation's user turn
    assert out["before"][1][0].startswith("brief: ")
    assert "music v1: calm acoustic" in out["before"][1]
    assert "music v2: upbeat pop, 120 bpm" in out["reply"]
    assert out["messages"] == 4  # the brief, the first reply, the message, its reply


def test_an_event_source_follows_a_run_and_resumes_with_last_event_id(node, live, make_ad):
    ad = make_ad(language="en")
    run = wait_until_finished(brief_send(request=RunRequest(ad=ad)))
    slow = send_message(
        request=RunRequest(conversation=run.conversation, text="make it even more upbeat")
    )

    out = run_node(node, "eventsource.mjs", {**live, "RUN_ID": str(slow.pk)})

    events = list(slow.events.order_by("seq").values_list("seq", flat=True))
    assert out["first"] + out["rest"] == events
    assert out["reconnections"] >= 2
