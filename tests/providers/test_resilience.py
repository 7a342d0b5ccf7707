"""``generate``: retries with the server's wait, failover along the route, attempts reported."""

from __future__ import annotations

import json

import pytest

from providers import (
    Attempt,
    AuthenticationFailed,
    BadRequest,
    ContentFiltered,
    GenerateRequest,
    ProviderBinding,
    RateLimited,
    ToolResultMessage,
    ToolSpec,
    TransientError,
    UserMessage,
    generate,
    route,
)
from providers.demo import DemoProvider
from providers.retry import RetryPolicy
from testbed.fake_openai import call, error_turn, turn

REQUEST = GenerateRequest(
    model="",
    system="You are the creative director.",
    messages=(UserMessage("Brief\nLanguage: en\nDuration: 30 s"),),
)
FAST = RetryPolicy(max_attempts=3, max_total_seconds=5.0, base_delay=0.001, max_delay=0.01)
RATE_LIMIT = {"error": {"message": "Rate limit reached", "code": "rate_limit_exceeded"}}


@pytest.fixture
def bindings(fake_openai):
    def make(*names: str) -> list[ProviderBinding]:
        return [
            ProviderBinding(name, f"fake-{name}", fake_openai.adapter(name, name=name))
            for name in names
        ]

    return make


def run(route_, *, policy=FAST):
    attempts: list[Attempt] = []
    sleeps: list[float] = []
    try:
        response = generate(
            REQUEST, route=route_, on_attempt=attempts.append, sleep=sleeps.append, policy=policy
        )
    except Exception as exc:
        return exc, attempts, sleeps
    return response, attempts, sleeps


def test_429_waits_as_told_then_succeeds(fake_openai, bindings):
    fake_openai.script(
        error_turn(429, RATE_LIMIT, headers={"Retry-After": "0.05"}),
        turn("Ready."),
    )

    response, attempts, sleeps = run(bindings("openai"))

    assert response.message.text == "Ready."
    assert sleeps == [0.05]
    assert [(a.provider, a.attempt, type(a.error).__name__) for a in attempts] == [
        ("openai", 1, "RateLimited"),
        ("openai", 2, "NoneType"),
    ]
    assert attempts[1].response is response


def test_500_then_success_backs_off(fake_openai, bindings):
    fake_openai.script(error_turn(500), turn("Ready."))

    response, attempts, sleeps = run(bindings("openai"))

    assert response.message.text == "Ready."
    assert len(sleeps) == 1 and 0 < sleeps[0] <= 0.01
    assert isinstance(attempts[0].error, TransientError)


def test_the_answering_provider_and_model_are_named_and_the_model_replaced(fake_openai, bindings):
    fake_openai.script(error_turn(401), turn("Qwen here."))

    response, attempts, sleeps = run(bindings("openai", "qwen"))

    assert (response.provider, response.model) == ("qwen", "fake-qwen")
    assert [r["model"] for r in fake_openai.requests] == ["fake-openai", "fake-qwen"]
    assert [(a.provider, a.model, a.attempt) for a in attempts] == [
        ("openai", "fake-openai", 1),
        ("qwen", "fake-qwen", 1),
    ]
    assert isinstance(attempts[0].error, AuthenticationFailed)
    assert sleeps == []  # an auth failure is not waited on


def test_quota_exhausted_fails_over_at_once(fake_openai, bindings):
    fake_openai.script(
        error_turn(429, {"error": {"message": "quota", "code": "insufficient_quota"}}),
        turn("Kimi here."),
    )

    response, attempts, sleeps = run(bindings("openai", "kimi"))

    assert response.provider == "kimi"
    assert sleeps == [] and len(attempts) == 2


def test_retries_exhausted_then_the_next_provider(fake_openai, bindings):
    fake_openai.script(error_turn(503), error_turn(502), error_turn(500), turn("Fallback."))

    response, attempts, sleeps = run(bindings("openai", "qwen"))

    assert response.provider == "qwen"
    assert [(a.provider, a.attempt) for a in attempts] == [
        ("openai", 1),
        ("openai", 2),
        ("openai", 3),
        ("qwen", 1),
    ]
    assert len(sleeps) == 2


def test_a_bad_request_is_final_for_the_whole_call(fake_openai, bindings):
    fake_openai.script(error_turn(400, {"error": {"message": "Invalid 'tools[0]'"}}))

    error, attempts, _ = run(bindings("openai", "qwen", "kimi"))

    assert isinstance(error, BadRequest)
    assert len(fake_openai.requests) == 1 and len(attempts) == 1


def test_content_filtered_is_final_for_the_whole_call(fake_openai, bindings):
    fake_openai.script(
        error_turn(400, {"error": {"code": "data_inspection_failed", "message": "x"}})
    )

    error, attempts, _ = run(bindings("qwen", "openai"))

    assert isinstance(error, ContentFiltered)
    assert len(attempts) == 1


def test_every_provider_failing_raises_the_last_error(fake_openai, bindings):
    fake_openai.script(
        error_turn(401),
        error_turn(429, RATE_LIMIT, headers={"retry-after-ms": "1"}),
        error_turn(429, RATE_LIMIT, headers={"retry-after-ms": "1"}),
        error_turn(429, RATE_LIMIT, headers={"retry-after-ms": "1"}),
    )

    error, attempts, sleeps = run(bindings("openai", "qwen"))

    assert isinstance(error, RateLimited) and error.provider == "qwen"
    assert len(attempts) == 4 and sleeps == [0.001, 0.001]


def test_a_wait_longer_than_the_budget_moves_on_instead_of_sleeping(fake_openai, bindings):
    fake_openai.script(
        error_turn(429, RATE_LIMIT, headers={"Retry-After": "600"}),
        turn("Qwen answers now."),
    )

    response, _, sleeps = run(bindings("openai", "qwen"))

    assert response.provider == "qwen"
    assert sleeps == []


def test_policy_defaults_come_from_settings(fake_openai, bindings, settings):
    settings.ADSTUDIO_PROVIDER_RETRY = {"max_attempts": 1, "base_delay": 0.001}
    fake_openai.script(error_turn(500), turn("second provider"))
    attempts: list[Attempt] = []

    response = generate(
        REQUEST, route=bindings("openai", "kimi"), on_attempt=attempts.append, sleep=lambda s: None
    )

    assert response.provider == "kimi"
    assert [a.provider for a in attempts] == ["openai", "kimi"]


def test_an_empty_route_is_a_programming_error():
    with pytest.raises(ValueError, match="route is empty"):
        generate(REQUEST, route=[])


def test_demo_route_answers_offline():
    demo = [ProviderBinding("demo", "demo-director", DemoProvider())]
    attempts: list[Attempt] = []

    response = generate(REQUEST, route=demo, on_attempt=attempts.append)

    assert response.provider == "demo" and response.model == "demo-director"
    assert attempts[0].provider == "demo" and attempts[0].error is None


def test_a_three_round_agent_conversation_through_the_router(fake_providers, settings):
    """The way the loop drives it: route by language, generate once per round."""
    settings.ADSTUDIO_PROVIDER_ROUTES = {"th": "qwen", "default": "openai"}
    tools = (
        ToolSpec("search_voices", "Search voices.", {"type": "object", "properties": {}}),
        ToolSpec("create_voice_draft", "Voice draft.", {"type": "object", "properties": {}}),
        ToolSpec("create_music_draft", "Music draft.", {"type": "object", "properties": {}}),
    )
    fake_providers.script(
        turn(tool_calls=[call("search_voices", {"language": "th"})]),
        turn(
            tool_calls=[
                call("create_voice_draft", {"tracks": [{"voiceId": "1", "text": "Hi"}]}),
                call("create_music_draft", {"prompt": "warm"}),
            ]
        ),
        turn("Voices v1 and music v1 are ready."),
    )
    bindings_ = route(language="th", market="TH")
    messages: list = [UserMessage("Brief\nLanguage: th\nDuration: 30 s")]
    texts = []
    for _ in range(3):
        request = GenerateRequest(model="", system="Direct.", messages=tuple(messages), tools=tools)
        response = generate(request, route=bindings_, sleep=lambda s: None)
        messages.append(response.message)
        messages += [
            ToolResultMessage(c.id, c.name, '{"ok": true}') for c in response.message.tool_calls
        ]
        texts.append(response.message.text)

    assert [b.name for b in bindings_] == ["qwen", "openai", "kimi"]
    assert texts[-1] == "Voices v1 and music v1 are ready."
    assert {r["model"] for r in fake_providers.requests} == {"fake-qwen"}
    assert len(fake_providers.requests[2]["messages"]) == 1 + 1 + 2 + 3  # system, user, 2 rounds


def test_every_round_resends_the_same_prefix_byte_for_byte(fake_providers):
    """Provider-side prompt caching only hits when the prefix is identical."""
    tools = (
        ToolSpec("search_voices", "Search voices.", {"type": "object", "properties": {}}),
        ToolSpec("create_music_draft", "Music draft.", {"type": "object", "properties": {}}),
    )
    fake_providers.script(
        turn(tool_calls=[call("search_voices", {"language": "en", "gender": "female"})]),
        turn("Done."),
    )
    adapter = fake_providers.adapter("openai")
    messages: list = [UserMessage("Brief\nLanguage: en\nDuration: 30 s")]
    for order in (tools, tools[::-1]):  # the tool registry may hand them over in any order
        request = GenerateRequest(
            model="m", system="Direct.", messages=tuple(messages), tools=order
        )
        response = adapter.generate(request)
        messages.append(response.message)
        messages += [ToolResultMessage(c.id, c.name, "{}") for c in response.message.tool_calls]

    one, two = fake_providers.requests
    assert json.dumps(one["tools"]) == json.dumps(two["tools"])
    assert json.dumps(two["messages"][: len(one["messages"])]) == json.dumps(one["messages"])
    assert len(two["messages"]) == len(one["messages"]) + 2
