"""Every way a provider can fail, through the real loop and the real openai SDK over HTTP.

For each fault the run either succeeds or ends failed with a readable error, and the
invariants hold: the user's message is stored, every assistant tool call has exactly one
result, and no tool call wrote two drafts.
"""

from __future__ import annotations

import json

import pytest
from django.db.models import Count

from conversations.models import Message, ModelCall, Run
from conversations.run_request import RunRequest
from conversations.services import brief_send
from drafts.models import Draft
from testbed.fake_openai import call, error_turn, raw_turn, turn

pytestmark = pytest.mark.django_db(transaction=True)

MUSIC = call("create_music_draft", {"prompt": "warm acoustic pop"})
DONE = turn("Music v1 is ready.")
JSON_500 = {"error": {"message": "upstream exploded", "type": "server_error"}}


def assert_invariants(run: Run) -> None:
    rows = list(Message.objects.filter(conversation=run.conversation).order_by("seq"))
    assert rows[0].role == "user" and rows[0].text == run.input_text
    answered = [r.tool_call_id for r in rows if r.role == "tool"]
    called = [c["id"] for r in rows if r.role == "assistant" for c in r.tool_calls]
    assert sorted(answered) == sorted(called), "a tool call without exactly one result"
    duplicates = (
        Draft.objects.values("run_id", "tool_call_id").annotate(n=Count("id")).filter(n__gt=1)
    )
    assert not duplicates
    if run.status == "failed":
        assert run.error_code and len(run.error_message) > 10
        assert "Traceback" not in run.error_message


# (fault, the turns the fake server plays, expected status, expected error code or None)
FAULTS = [
    (
        "429 with Retry-After, then success",
        [
            error_turn(
                429,
                {"error": {"message": "Rate limit reached", "type": "rate_limit"}},
                headers={"Retry-After": "0.01"},
            ),
            turn(tool_calls=[MUSIC]),
            DONE,
        ],
        "succeeded",
        None,
    ),
    (
        "500 then success",
        [error_turn(500, JSON_500), turn(tool_calls=[MUSIC]), DONE],
        "succeeded",
        None,
    ),
    (
        "502 then success",
        [
            error_turn(502, "<html>Bad gateway</html>", content_type="text/html"),
            turn(tool_calls=[MUSIC]),
            DONE,
        ],
        "succeeded",
        None,
    ),
    ("503 every time", [error_turn(503, JSON_500)] * 3, "failed", "transient"),
    (
        "a connection reset, then success",
        [turn(reset=True), turn(tool_calls=[MUSIC]), DONE],
        "succeeded",
        None,
    ),
    ("a connection reset every time", [turn(reset=True)] * 3, "failed", "transient"),
    (
        "a stream chunk of the wrong shape, then success",
        [turn(tool_calls=[MUSIC], bad_chunk={"choices": 5}), turn(tool_calls=[MUSIC]), DONE],
        "succeeded",
        None,
    ),
    (
        "stream chunks of the wrong shape every time",
        [
            turn(bad_chunk={"choices": [{"delta": "x"}]}),
            turn(bad_chunk={"choices": [{"delta": {"tool_calls": 5}}]}),
            turn(bad_chunk={"choices": [{"delta": {"tool_calls": [{"function": "x"}]}}]}),
        ],
        "failed",
        "transient",
    ),
    (
        "a stream cut mid tool call",
        [turn(tool_calls=[MUSIC], cut_after=2), turn(tool_calls=[MUSIC]), DONE],
        "succeeded",
        None,
    ),
    (
        "an error object after HTTP 200",
        [turn(tool_calls=[MUSIC], error_after=1), turn(tool_calls=[MUSIC]), DONE],
        "succeeded",
        None,
    ),
    (
        "a stream with no finish reason",
        [turn(tool_calls=[MUSIC], no_finish=True), turn(tool_calls=[MUSIC]), DONE],
        "succeeded",
        None,
    ),
    (
        "a body that is not JSON",
        [raw_turn("this is not json"), turn(tool_calls=[MUSIC]), DONE],
        "succeeded",
        None,
    ),
    (
        "a read timeout, then success",
        [turn(tool_calls=[MUSIC], delay=1.5), turn(tool_calls=[MUSIC]), DONE],
        "succeeded",
        None,
    ),
    (
        "tool-call arguments that are not JSON",
        [turn(tool_calls=[call("create_music_draft", raw="{{{{ not json")]), DONE],
        "succeeded",
        None,
    ),
    ("an unknown tool name", [turn(tool_calls=[call("make_coffee", {})]), DONE], "succeeded", None),
    (
        "20 tool calls in one response",
        [
            turn(
                tool_calls=[
                    call("create_music_draft", {"prompt": f"take {n} of the jingle"})
                    for n in range(20)
                ]
            ),
            DONE,
        ],
        "succeeded",
        None,
    ),
    (
        "401: bad key",
        [
            error_turn(
                401,
                {
                    "error": {
                        "message": "Incorrect API key provided",
                        "type": "invalid_request_error",
                    }
                },
            )
        ],
        "failed",
        "authentication",
    ),
    (
        "insufficient quota",
        [
            error_turn(
                429,
                {
                    "error": {
                        "message": "You exceeded your quota",
                        "type": "insufficient_quota",
                        "code": "insufficient_quota",
                    }
                },
            )
        ],
        "failed",
        "quota_exhausted",
    ),
]


@pytest.mark.parametrize(("fault", "turns", "status", "code"), FAULTS, ids=[f[0] for f in FAULTS])
def test_provider_fault(fake_providers, make_ad, settings, fault, turns, status, code):
    settings.ADSTUDIO_PROVIDER_FALLBACKS = []
    settings.ADSTUDIO_PROVIDER_TIMEOUT = 1.0
    fake_providers.script(*turns)

    run = brief_send(request=RunRequest(ad=make_ad(language="en")))

    run.refresh_from_db()
    assert run.status == status, run.error_message
    assert (run.error_code or None) == code
    assert_invariants(run)


def test_twenty_calls_in_one_response_write_twenty_versions(fake_providers, make_ad):
    fake_providers.script(
        turn(
            tool_calls=[
                call("create_music_draft", {"prompt": f"take {n} of the jingle"}) for n in range(20)
            ]
        ),
        DONE,
    )
    run = brief_send(request=RunRequest(ad=make_ad(language="en")))
    run.refresh_from_db()
    versions = sorted(Draft.objects.filter(run_id=run.pk).values_list("version", flat=True))
    assert versions == list(range(1, 21))


def test_a_model_that_never_stops_calling_tools_is_stopped(fake_providers, make_ad, settings):
    settings.ADSTUDIO_MAX_ROUNDS = 4
    fake_providers.script(*[turn(tool_calls=[MUSIC])] * 4, turn("Stopping here."))

    run = brief_send(request=RunRequest(ad=make_ad(language="en")))

    run.refresh_from_db()
    assert run.status == "succeeded" and run.stop_cause == "max_rounds"
    assert Draft.objects.filter(run_id=run.pk).count() == 4
    assert_invariants(run)


def test_primary_down_for_the_whole_run_the_fallback_answers(fake_providers, make_ad, settings):
    settings.ADSTUDIO_PROVIDER_FALLBACKS = ["kimi"]
    down = error_turn(503, JSON_500)
    fake_providers.script(
        down,
        down,
        down,
        turn(tool_calls=[MUSIC]),  # round 1
        down,
        down,
        down,
        DONE,
    )  # round 2

    run = brief_send(request=RunRequest(ad=make_ad(language="en")))

    run.refresh_from_db()
    assert run.status == "succeeded" and run.provider == "kimi"
    answered = list(
        ModelCall.objects.filter(run=run, error_code="").values_list("round", "provider")
    )
    assert answered == [(1, "kimi"), (2, "kimi")]
    assert ModelCall.objects.filter(run=run, provider="openai", error_code="transient").count() == 6
    assert_invariants(run)
    tool = Message.objects.get(conversation=run.conversation, role="tool")
    assert json.loads(tool.text)["versionId"] == "v1"


def test_an_outage_fails_the_run_readably_over_http_and_the_api_stays_up(
    fake_providers, make_ad, user, settings
):
    from rest_framework.test import APIClient

    from accounts.services import token_create

    settings.ADSTUDIO_PROVIDER_FALLBACKS = []
    fake_providers.script(*[error_turn(503, JSON_500)] * 3)
    ad = make_ad(language="en")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")

    generated = api.post("/api/ai/generate?wait=10", {"adId": str(ad.pk), "provider": "openai"})
    run = api.get(f"/api/runs/{generated.json()['runId']}").json()

    assert generated.status_code == 200 and generated.json()["status"] == "failed"
    assert run["status"] == "failed"
    assert run["error"]["code"] == "transient"
    assert run["error"]["message"] == "openai: HTTP 503: upstream exploded"
    assert run["finishedAt"] is not None
    assert api.get("/api/ads/").status_code == 200


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ('{"prompt": "warm pop", "seconds": 1e400}', "not finite (NaN or Infinity)"),
        ('{"prompt": "warm pop", "seconds": NaN}', "not finite (NaN or Infinity)"),
        ('{"prompt": "warm pop", "seconds": 123456789012345678901234567890}', "integer too large"),
        ('{"prompt": "warm\\u0000pop"}', "a NUL character"),
        ('{"prompt": ' * 20_000, "arguments"),
    ],
    ids=["infinity", "nan", "huge integer", "nul", "nested 20000 deep"],
)
def test_arguments_the_database_cannot_store_are_a_tool_error(fake_providers, make_ad, raw, says):
    fake_providers.script(turn(tool_calls=[call("create_music_draft", raw=raw)]), DONE)

    run = brief_send(request=RunRequest(ad=make_ad(language="en")))

    run.refresh_from_db()
    assert run.status == "succeeded", run.error_message
    result = Message.objects.get(run=run, role="tool")
    assert result.is_error and says in result.text
    assert ModelCall.objects.filter(run=run).count() == 2  # both calls' usage is kept
    assert not Draft.objects.exists()
    assert_invariants(run)


def test_nul_characters_and_a_tool_name_too_long_for_its_column_are_stored(fake_providers, make_ad):
    made_up = "imagine_" * 10  # 80 characters; a tool result's name column holds 64
    fake_providers.script(
        turn("Thinking\x00", tool_calls=[call(made_up, {}, id="call\x001")]),
        turn("Music v1\x00 is ready."),
    )

    run = brief_send(request=RunRequest(ad=make_ad(language="en")))

    run.refresh_from_db()
    assert run.status == "succeeded", run.error_message
    assert run.final_message == "Music v1\ufffd is ready."
    result = Message.objects.get(run=run, role="tool")
    assert result.is_error and "nknown tool" in result.text
    assert result.name == made_up[:64] and result.tool_call_id == "call\ufffd1"
    assert_invariants(run)


def test_text_streamed_by_a_failed_attempt_is_reset_for_clients(
    fake_providers, make_ad, monkeypatch
):
    from conversations.models import RunEvent
    from conversations.record import log as run_log

    monkeypatch.setattr(run_log, "TEXT_EVENT_INTERVAL", 0)  # every delta is sent at once
    fake_providers.script(turn("Music v1 is ready.", cut_after=3), turn("Music v1 is ready."))

    run = brief_send(request=RunRequest(ad=make_ad(language="en")))

    run.refresh_from_db()
    assert run.status == "succeeded", run.error_message
    texts = [e.data for e in RunEvent.objects.filter(run=run, type="text").order_by("seq")]
    assert {"reset": True} in texts
    after_reset = texts[len(texts) - texts[::-1].index({"reset": True}) :]
    assert "".join(t["delta"] for t in after_reset) == "Music v1 is ready."
    assert run.final_message == "Music v1 is ready."
