"""``/metrics``: who may read it, and that a run moves the counters by what it did, in this
process and, in multiprocess mode, from a worker process."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from accounts.services import token_create
from adstudio.observability import metrics, views
from conversations.agent.loop import run_agent
from conversations.models import Conversation, Run
from providers import Usage
from providers.pricing import usage_cost
from testbed.fake_openai import call, turn
from tests.support.worker import wait_until_finished

pytestmark = pytest.mark.django_db(transaction=True)

PRICES = {"input": 2.0, "cached_input": 0.5, "output": 8.0}
USAGE = [
    {
        "prompt_tokens": 900,
        "completion_tokens": 40,
        "total_tokens": 940,
        "prompt_tokens_details": {"cached_tokens": 512},
    },
    {
        "prompt_tokens": 1100,
        "completion_tokens": 25,
        "total_tokens": 1125,
        "prompt_tokens_details": {"cached_tokens": 896},
    },
]
OPENAI = {"provider": "openai", "model": "fake-openai"}


def scrape(client, token: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of ``/metrics``, by name and labels."""
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_are_for_staff_sessions_and_the_bearer_token(
    client, metrics_on, user, staff_user, settings
):
    anonymous = client.get("/metrics")
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"] == 'Bearer realm="metrics"'
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong-token").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_on}x").status_code == 401
    # An API token is no metrics token.
    api_token = token_create(user=staff_user)[1]
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Token {api_token}").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_on}").status_code == 200

    client.force_login(user)
    assert client.get("/metrics").status_code == 403
    client.force_login(staff_user)
    assert client.get("/metrics").status_code == 200

    settings.ADSTUDIO_METRICS_TOKEN = ""  # no token configured: no bearer gets in
    client.logout()
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401
    metrics.disable()
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_on}").status_code == 404


def test_a_session_reads_the_metrics_with_the_permission_its_app_gave(
    client, metrics_on, staff_user, monkeypatch
):
    """The project package names no app's permission: the conversations app gives it at
    start, and without it no session reads the figures (the bearer token still does)."""
    client.force_login(staff_user)
    assert client.get("/metrics").status_code == 200  # given: ConversationsConfig.ready
    monkeypatch.setattr(views, "_permission", None)
    refused = client.get("/metrics")
    assert refused.status_code == 403
    assert refused.content == b"Needs the permission to view the statistics.\n"
    client.logout()
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_on}").status_code == 200


def test_the_queue_is_read_in_one_query_at_scrape_time(
    client, metrics_on, make_ad, django_assert_num_queries
):
    conversation = Conversation.objects.create(ad=make_ad())
    waiting = Run.objects.create(conversation=conversation, input_text="waiting")
    Run.objects.filter(pk=waiting.pk).update(created_at=timezone.now() - timedelta(seconds=90))
    Run.objects.create(conversation=conversation, input_text="after it")

    with django_assert_num_queries(1):
        samples = scrape(client, metrics_on)

    assert value(samples, "adstudio_runs_queued") == 2
    assert 90 <= value(samples, "adstudio_runs_queued_oldest_age_seconds") < 120


def test_a_run_moves_the_counters_by_what_it_did(
    client, metrics_on, fake_providers, settings, user, make_ad, make_voice
):
    settings.ADSTUDIO_MODEL_PRICES = {**settings.ADSTUDIO_MODEL_PRICES, "fake-openai": PRICES}
    make_voice(language="en", name="Ava")
    ad = make_ad(language="en")
    fake_providers.script(
        # Arguments with a trailing comma: repaired, and the search runs.
        turn(
            tool_calls=[call("search_voices", raw='{"language": "en", "count": 2,}')],
            usage=USAGE[0],
        ),
        turn("Ava reads it.", usage=USAGE[1]),
    )
    settings.ADSTUDIO_RUN_RATE = "1/minute"
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    before = scrape(client, metrics_on)

    generated = api.post("/api/ai/generate", {"adId": str(ad.pk)})  # runs here, eagerly
    refused = api.post(f"/api/ads/{ad.pk}/chat", {"message": "Again."})
    after = scrape(client, metrics_on)

    run = Run.objects.get(pk=generated.json()["runId"])
    assert run.status == "succeeded" and refused.status_code == 429

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("adstudio_runs_started_total", provider="openai") == 1
    assert moved("adstudio_runs_finished_total", provider="openai", status="succeeded") == 1
    assert moved("adstudio_run_resumes_total", provider="openai") == 0
    assert moved("adstudio_model_call_duration_seconds_count", **OPENAI, outcome="ok") == 2
    assert moved("adstudio_model_call_duration_seconds_sum", **OPENAI, outcome="ok") > 0
    for kind, key in (("prompt", "prompt_tokens"), ("completion", "completion_tokens")):
        expected = sum(u[key] for u in USAGE)
        assert moved("adstudio_model_tokens_total", **OPENAI, type=kind) == expected
    cached = sum(u["prompt_tokens_details"]["cached_tokens"] for u in USAGE)
    assert moved("adstudio_model_tokens_total", **OPENAI, type="cached") == cached
    cost = sum(
        usage_cost(
            model="fake-openai",
            usage=Usage(
                prompt_tokens=u["prompt_tokens"],
                completion_tokens=u["completion_tokens"],
                cached_prompt_tokens=u["prompt_tokens_details"]["cached_tokens"],
            ),
        )
        for u in USAGE
    )
    assert cost == run.cost > 0
    assert moved("adstudio_model_cost_usd_total", **OPENAI) == pytest.approx(float(cost))
    assert moved("adstudio_tool_calls_total", tool="search_voices", outcome="ok") == 1
    assert moved("adstudio_tool_calls_total", tool="search_voices", outcome="error") == 0
    repairs = {"provider": "openai", "tool": "search_voices", "result": "repaired"}
    assert moved("adstudio_tool_argument_repairs_total", **repairs) == 1
    assert moved("adstudio_throttled_requests_total", scope="runs") == 1


def test_a_run_taken_over_from_a_dead_worker_counts_as_a_resume(
    client, metrics_on, fake_providers, make_ad
):
    conversation = Conversation.objects.create(ad=make_ad(language="en"))
    stale = timezone.now() - timedelta(hours=1)
    run = Run.objects.create(
        conversation=conversation,
        input_text="Hello",
        status="running",
        claims=1,
        started_at=stale,
        heartbeat_at=stale,  # its worker stopped beating an hour ago
    )
    fake_providers.script(turn("Hello again."))
    before = scrape(client, metrics_on)

    run_agent(run.pk)

    after = scrape(client, metrics_on)
    run.refresh_from_db()
    assert run.status == "succeeded" and run.claims == 2
    resumes = ("adstudio_run_resumes_total", frozenset({"provider": "openai"}.items()))
    started = ("adstudio_runs_started_total", frozenset({"provider": "openai"}.items()))
    assert after.get(resumes, 0) - before.get(resumes, 0) == 1
    assert after.get(started, 0) - before.get(started, 0) == 0


@pytest.mark.worker
def test_a_workers_metrics_reach_the_web_through_the_multiprocess_directory(
    client, metrics_on, worker, fake_openai, settings, make_ad, tmp_path
):
    """The worker writes its values to files in PROMETHEUS_MULTIPROC_DIR; this process,
    as a web process of the same host, reads them all at the scrape."""
    settings.PROMETHEUS_MULTIPROC_DIR = str(worker_metrics_dir(tmp_path))
    from conversations.run_request import RunRequest
    from conversations.services import brief_send

    fake_openai.script(turn("Done.", usage=USAGE[0]))
    run = wait_until_finished(brief_send(request=RunRequest(ad=make_ad(language="en"))))
    assert run.status == "succeeded"
    finished = {"provider": "openai", "status": "succeeded"}

    # The worker counts the run's end once its finish is committed, which is what woke
    # this test: scrape until the count is there.
    deadline = time.monotonic() + 10
    samples = scrape(client, metrics_on)
    while not value(samples, "adstudio_runs_finished_total", **finished):
        assert time.monotonic() < deadline, "the worker never counted the run's end"
        time.sleep(0.05)
        samples = scrape(client, metrics_on)

    assert value(samples, "adstudio_runs_started_total", provider="openai") == 1
    assert value(samples, "adstudio_runs_finished_total", **finished) == 1
    assert value(samples, "adstudio_model_call_duration_seconds_count", **OPENAI, outcome="ok") == 1
    assert value(samples, "adstudio_model_tokens_total", **OPENAI, type="prompt") == 900
    assert value(samples, "adstudio_runs_queued") == 0


def worker_metrics_dir(tmp_path):
    return tmp_path / "prometheus"


@pytest.fixture
def worker_extra_env(tmp_path) -> dict[str, str]:
    directory = worker_metrics_dir(tmp_path)
    directory.mkdir(exist_ok=True)
    return {"PROMETHEUS_MULTIPROC_DIR": str(directory)}


def test_the_grafana_dashboard_plots_every_metric_by_its_served_name(client, metrics_on):
    """docs/grafana-dashboard.json names only series /metrics serves, and all of them."""
    from pathlib import Path

    dashboard = json.loads(
        (Path(__file__).resolve().parents[3] / "docs" / "grafana-dashboard.json").read_text()
    )
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    plotted = {name for q in queries for name in re.findall(r"\badstudio_\w+", q)}
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_on}")
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
    served = {}  # series name -> family name
    for family in text_string_to_metric_families(response.content.decode()):
        # (the text format also serves each counter's and histogram's _created time)
        if family.name.startswith("adstudio_") and not family.name.endswith("_created"):
            for suffix in suffixes.get(family.type, ("",)):
                served[family.name + suffix] = family.name

    assert plotted <= set(served), plotted - set(served)
    assert {served[name] for name in plotted} == set(served.values())
