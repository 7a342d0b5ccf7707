"""Traces: one trace from the API request through the Celery task to the model's HTTP
calls, a resumed run linked to its first attempt, prompts and keys kept out of spans,
and nothing installed without an endpoint.

The web side runs in this process (the Django test client, an in-memory exporter); the
worker is a real Celery process exporting with the real OTLP exporter to a collector on
loopback (``tests/support/otlp.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from rest_framework.test import APIClient

from accounts.services import token_create
from adstudio.observability import current_trace_id, hooks, switch, tracing
from conversations.models import Run
from conversations.run_request import RunRequest
from conversations.services import brief_send
from testbed.fake_openai import TEST_API_KEY, call, turn
from tests.support.fixtures import STALE_AFTER
from tests.support.otlp import SpanRecord
from tests.support.worker import ROOT, heartbeat_stale, wait_for, wait_until_finished

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "conversations.tasks.run_agent"
# What the fake provider reports for each call: known numbers to find in the spans.
USAGE = [
    {
        "prompt_tokens": 1200 + n,
        "completion_tokens": 30 + n,
        "total_tokens": 1230 + 2 * n,
        "prompt_tokens_details": {"cached_tokens": 1024 + n},
    }
    for n in range(4)
]
CHAT_TEXT = "Make it warmer, like a Sunday morning."


@pytest.fixture
def worker_extra_env(collector) -> dict[str, str]:
    """The worker exports to ``collector`` every 0.1 s, and is asked to record every
    request header of its HTTP calls (the keys' headers must come out redacted)."""
    return {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
        "OTEL_SERVICE_NAME": "adstudio-worker",
        "OTEL_INSTRUMENTATION_HTTP_CAPTURE_HEADERS_CLIENT_REQUEST": ".*",
    }


def api_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    return client


def wait_finished(run_id: str) -> Run:
    return wait_until_finished(Run.objects.get(pk=run_id))


def one(spans: list[SpanRecord], what: str, **match) -> SpanRecord:
    found = [s for s in spans if all(_matches(s, k, v) for k, v in match.items())]
    assert len(found) == 1, f"{what}: {len(found)} spans match {match}"
    return found[0]


def _matches(span: SpanRecord, key: str, value) -> bool:
    if key in ("name", "kind", "parent_id", "trace_id"):
        return getattr(span, key) == value
    return span.attributes.get(key.replace("__", ".")) == value


def children(spans: list[SpanRecord], parent: SpanRecord, prefix: str = "") -> list[SpanRecord]:
    return sorted(
        (s for s in spans if s.parent_id == parent.span_id and s.name.startswith(prefix)),
        key=lambda s: s.start,
    )


@pytest.mark.worker
def test_a_generation_and_a_chat_are_each_one_trace_from_request_to_model_calls(
    tracing_on, worker, collector, fake_openai, user, make_ad, make_voice
):
    web = tracing_on()
    make_voice(language="en", name="Ava")
    ad = make_ad(language="en")
    fake_openai.script(
        turn(tool_calls=[call("search_voices", {"language": "en", "count": 3})], usage=USAGE[0]),
        turn("Ava reads it.", usage=USAGE[1]),
        # the chat: a call the tool refuses (no prompt), then the answer
        turn(tool_calls=[call("create_music_draft", {})], usage=USAGE[2]),
        turn("Warmer music is on its way.", usage=USAGE[3]),
    )
    api = api_for(user)

    generated = api.post("/api/ai/generate", {"adId": str(ad.pk)})
    assert generated.status_code == 202, generated.content
    generation = wait_finished(generated.json()["runId"])
    chatted = api.post(f"/api/ads/{ad.pk}/chat", {"message": CHAT_TEXT})
    assert chatted.status_code == 202, chatted.content
    chat = wait_finished(chatted.json()["runId"])
    assert (generation.status, chat.status) == ("succeeded", "succeeded")

    # At least two: on a busy machine the recovery sweep may send a task again for a run
    # still queued past its grace, and that task finds nothing to do.
    worker_spans = collector.wait_for(
        lambda spans: sum(s.name == f"run/{TASK}" for s in spans) >= 2,
        what="both tasks' spans",
    )
    web_spans = web.spans()
    for run, path, first_call in (
        (generation, "api/ai/generate", 0),
        (chat, "api/ads/<uuid:ad_id>/chat", 2),
    ):
        # In the web process: the request, and the task published under it.
        request = one(web_spans, "request", kind="SERVER", http__route=path)
        published = one(web_spans, "publish", kind="PRODUCER", parent_id=request.span_id)
        assert published.name == f"apply_async/{TASK}"
        assert published.trace_id == request.trace_id
        # In the worker: the same trace, the task under the publish.
        task = one(worker_spans, "task", kind="CONSUMER", parent_id=published.span_id)
        assert task.trace_id == request.trace_id and task.service == "adstudio-worker"
        agent = one(
            worker_spans, "run", parent_id=task.span_id, gen_ai__operation__name="invoke_agent"
        )
        assert agent.name == "invoke_agent creative_director"
        assert agent.attributes["adstudio.run.id"] == str(run.pk)
        assert agent.attributes["gen_ai.conversation.id"] == str(run.conversation_id)
        assert agent.attributes["gen_ai.provider.name"] == "openai"
        assert agent.attributes["adstudio.run.status"] == "succeeded"
        assert agent.attributes["adstudio.run.resumed"] is False
        assert agent.trace_id == request.trace_id
        assert run.trace_context.split("-")[1:3] == [agent.trace_id, agent.span_id]

        chats = children(worker_spans, agent, "chat ")
        assert [c.name for c in chats] == ["chat fake-openai"] * 2
        for n, span in enumerate(chats, start=first_call):
            assert span.kind == "CLIENT"
            attributes = span.attributes
            assert attributes["gen_ai.operation.name"] == "chat"
            assert attributes["gen_ai.provider.name"] == "openai"
            assert attributes["gen_ai.request.model"] == "fake-openai"
            assert attributes["gen_ai.response.model"] == "fake-openai"
            assert attributes["gen_ai.response.id"] == f"chatcmpl-fake-{n + 1}"
            assert attributes["gen_ai.usage.input_tokens"] == USAGE[n]["prompt_tokens"]
            assert attributes["gen_ai.usage.output_tokens"] == USAGE[n]["completion_tokens"]
            assert attributes["gen_ai.usage.cache_read.input_tokens"] == 1024 + n
            # The SDK's HTTP call, under the model call that made it (with the statement
            # that writes the reply's first words as they arrive, when it has text).
            (http,) = [
                s
                for s in children(worker_spans, span)
                if s.attributes.get("db.system.name") != "postgresql"
            ]
            assert http.kind == "CLIENT" and http.attributes["http.request.method"] == "POST"
            assert http.attributes["url.full"] == f"{fake_openai.base_url}/chat/completions"
            assert http.attributes["http.request.header.authorization"] == ("[REDACTED]",)
            assert http.attributes["http.request.header.content_type"] == ("application/json",)
        assert chats[0].attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
        assert chats[1].attributes["gen_ai.response.finish_reasons"] == ("end_turn",)

        (tool,) = children(worker_spans, agent, "execute_tool ")
        assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
        assert tool.attributes["gen_ai.tool.call.id"] == f"call_fake_{first_call + 1}_0"
        # The run's statements under it: the step with the tool's result is the loop's.
        statements = [s for s in worker_spans if s.attributes.get("db.system.name") == "postgresql"]
        assert any(s.parent_id == agent.span_id for s in statements)

    search = one(worker_spans, "search", gen_ai__tool__name="search_voices")
    assert search.name == "execute_tool search_voices" and search.status == "UNSET"
    # A tool's own reads, under it.
    assert any(s.parent_id == search.span_id for s in statements)
    refused = one(worker_spans, "refused call", gen_ai__tool__name="create_music_draft")
    assert refused.status == "ERROR" and refused.attributes["error.type"] == "tool_error"
    assert len({s.trace_id for s in worker_spans if s.name == f"run/{TASK}"}) == 2

    # No content by default (not even in the statements), and no key ever.
    everything = web_spans + worker_spans
    for span in everything:
        assert not {"gen_ai.input.messages", "gen_ai.output.messages"} & set(span.attributes)
        assert "gen_ai.tool.call.arguments" not in span.attributes
        texts = list(span.texts())
        assert not any(CHAT_TEXT in text for text in texts), span.name
        assert not any(TEST_API_KEY in text for text in texts), span.name


@pytest.mark.worker
def test_a_resumed_run_links_to_the_attempt_whose_worker_died(
    tracing_on, worker, collector, fake_openai, user, make_ad
):
    web = tracing_on()
    ad = make_ad(language="en")
    fake_openai.script(
        turn("never delivered", delay=5.0),  # the worker dies while waiting on this
        turn(tool_calls=[call("create_music_draft", {"prompt": "warm acoustic pop"})]),
        turn("Music v1 is ready."),
    )
    generated = api_for(user).post("/api/ai/generate", {"adId": str(ad.pk)})
    run_id = generated.json()["runId"]
    request = one(web.spans(), "request", kind="SERVER", http__route="api/ai/generate")
    fake_openai.wait_for_requests(1)
    first = Run.objects.get(pk=run_id).trace_context
    _, trace_id, first_span_id, _ = first.split("-")
    assert trace_id == request.trace_id  # the first attempt ran in the request's trace
    # Its statements so far are exported (every 0.1 s) before its worker is killed: spans
    # still in the worker's export queue die with it.
    collector.wait_for(
        lambda spans: any(s.parent_id == first_span_id and s.trace_id == trace_id for s in spans),
        what="the first attempt's statements",
    )

    worker.kill()
    run = Run.objects.get(pk=run_id)
    wait_for(lambda: heartbeat_stale(run, STALE_AFTER), what="its heartbeat to go stale")
    worker.start()  # its start-up recovery sweep enqueues the run again

    run = wait_finished(run_id)
    assert run.status == "succeeded" and run.claims == 2
    spans = collector.wait_for(
        lambda spans: any(s.attributes.get("adstudio.run.resumed") is True for s in spans),
        what="the resumed attempt",
    )
    resumed = one(spans, "resumed attempt", adstudio__run__resumed=True)
    assert resumed.attributes["adstudio.run.id"] == run_id
    assert resumed.attributes["adstudio.run.claims"] == 2
    assert resumed.trace_id != request.trace_id  # the recovery sweep's trace
    # The link names the dead attempt's span, under which its statements were exported.
    assert resumed.links == ((trace_id, first_span_id, {"adstudio.link": "earlier_attempt"}),)
    assert Run.objects.get(pk=run_id).trace_context == first  # the first attempt's, kept


def test_content_is_recorded_only_when_the_setting_says_so(
    tracing_on, fake_providers, make_ad, make_voice
):
    make_voice(language="en", name="Ava")
    script = (
        turn(tool_calls=[call("search_voices", {"language": "en", "count": 2})]),
        turn("Ava it is."),
    )

    fake_providers.script(*script)
    traced = tracing_on()
    brief_send(request=RunRequest(ad=make_ad(language="en", title="plain")))
    plain = traced.spans()
    tracing.uninstall()
    fake_providers.script(*script)
    traced = tracing_on(content=True)
    brief_send(request=RunRequest(ad=make_ad(language="en", title="with content")))
    with_content = traced.spans()

    def content(spans):
        keys = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions")
        keys += ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result")
        return {k: s.attributes[k] for s in spans for k in keys if k in s.attributes}

    assert len([s for s in plain if s.name.startswith("chat ")]) == 2
    assert content(plain) == {}
    recorded = content(with_content)
    assert set(recorded) == {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }
    chats = sorted((s for s in with_content if s.name.startswith("chat ")), key=lambda s: s.start)
    answer = json.loads(chats[1].attributes["gen_ai.output.messages"])
    assert answer == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Ava it is."}],
            "finish_reason": "end_turn",
        }
    ]
    asked = json.loads(chats[1].attributes["gen_ai.input.messages"])
    assert [m["role"] for m in asked] == ["user", "assistant", "tool"]
    assert asked[1]["parts"][0]["name"] == "search_voices"
    assert json.loads(recorded["gen_ai.tool.call.arguments"]) == {"language": "en", "count": 2}
    assert "Ava" in recorded["gen_ai.tool.call.result"]


def test_with_tracing_off_the_hooks_do_nothing(fake_providers, make_ad, make_voice):
    """The suite runs without an endpoint: no provider, no span, and the hooks hand back
    their do-nothing object."""
    assert not switch.on and switch.tracer is None
    make_voice(language="en")
    fake_providers.script(turn("Done."))
    run = brief_send(request=RunRequest(ad=make_ad(language="en")))
    run.refresh_from_db()
    assert run.status == "succeeded"
    assert Run.objects.get(pk=run.pk).trace_context == ""  # no UPDATE was made
    assert hooks.model_call("openai", object()) is hooks._OFF
    assert current_trace_id() is None


_PROBE = """
import json, django
django.setup()
import httpx2, psycopg
from celery.signals import before_task_publish
from django.conf import settings
from opentelemetry import trace
from adstudio import observability
from adstudio.observability import hooks, switch
print(json.dumps({
    "switch": switch.on,
    "provider": type(trace.get_tracer_provider()).__name__,
    "middleware": any("opentelemetry" in m for m in settings.MIDDLEWARE),
    "httpx2": hasattr(httpx2.HTTPTransport.handle_request, "__wrapped__"),
    "psycopg": hasattr(psycopg.connect, "__wrapped__"),
    "celery": len(before_task_publish.receivers),
    "hook": hooks.model_call("openai", None) is hooks._OFF,
}))
"""


def probe(**env: str) -> dict:
    """What a fresh process that starts Django with ``env`` has installed."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    environment.update(DJANGO_SETTINGS_MODULE="adstudio.settings", **env)
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_without_an_endpoint_no_tracer_provider_or_instrumentation_is_installed():
    off = probe()
    on = probe(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")  # the control

    assert off == {
        "switch": False,
        "provider": "ProxyTracerProvider",
        "middleware": False,
        "httpx2": False,
        "psycopg": False,
        "celery": 0,
        "hook": True,
    }
    assert on == {
        "switch": True,
        "provider": "TracerProvider",
        "middleware": True,
        "httpx2": True,
        "psycopg": True,
        "celery": 1,
        "hook": False,
    }
    assert probe(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9", OTEL_SDK_DISABLED="true") == off


def test_scrapes_and_probes_get_no_request_span(tracing_on, metrics_on, client, staff_user):
    traced = tracing_on()
    client.force_login(staff_user)

    assert client.get("/metrics").status_code == 200
    client.get("/healthz")
    assert client.get("/api/voices/?language=en").status_code == 200

    requests = [s for s in traced.spans() if s.kind == "SERVER"]
    assert len(requests) == 1 and "voices" in requests[0].attributes["http.route"]
