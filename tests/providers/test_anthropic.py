"""The Anthropic adapter through the real anthropic SDK over HTTP, against the local Messages
API server: streaming, parallel and truncated tool calls, usage, errors and retries, routing."""

from __future__ import annotations

import pytest

import providers
from providers import (
    AuthenticationFailed,
    BadRequest,
    GenerateOptions,
    GenerateRequest,
    ProviderBinding,
    QuotaExhausted,
    RateLimited,
    RetryPolicy,
    StopReason,
    ToolResultMessage,
    ToolSpec,
    TransientError,
    UserMessage,
)
from providers.anthropic_format import TRUNCATED_CALL
from providers.anthropic_messages import AnthropicProvider
from testbed.fake_anthropic import (
    ANTHROPIC_TEST_MODEL,
    claude_error,
    claude_turn,
    messages_protocol_problems,
)
from testbed.fake_openai import call

TOOLS = (
    ToolSpec("search_voices", "Search voices.", {"type": "object", "properties": {}}),
    ToolSpec("create_music_draft", "Music draft.", {"type": "object", "properties": {}}),
    ToolSpec("get_current_state", "State.", {"type": "object", "properties": {}}),
)
BRIEF = UserMessage("Brief\nClient: Spotify Premium family plan\nLanguage: en")
SECRET = "sk-ant-api03-very-secret-key-value"


def ask(*messages, stream: bool = True, **options) -> GenerateRequest:
    return GenerateRequest(
        model=ANTHROPIC_TEST_MODEL,
        system="You are the creative director.",
        messages=messages or (BRIEF,),
        tools=TOOLS,
        options=GenerateOptions(stream=stream, **options),
    )


def generate_with_retries(adapter: AnthropicProvider, request: GenerateRequest):
    """providers.generate over one binding, recording attempts and waits instead of sleeping."""
    attempts: list = []
    waits: list[float] = []
    policy = RetryPolicy(max_attempts=3, max_total_seconds=60.0, base_delay=0.01, max_delay=0.01)
    binding = ProviderBinding(name="anthropic", model=ANTHROPIC_TEST_MODEL, provider=adapter)
    try:
        response = providers.generate(
            request, route=[binding], on_attempt=attempts.append, sleep=waits.append, policy=policy
        )
    except providers.ProviderError as exc:
        return exc, attempts, waits
    return response, attempts, waits


# --- streaming -------------------------------------------------------------------------


def test_streamed_text_reaches_on_text_and_the_request_is_a_messages_request(fake_anthropic):
    fake_anthropic.script(claude_turn("A warm, upbeat family ad."))
    deltas: list[str] = []

    response = fake_anthropic.adapter().generate(ask(), on_text=deltas.append)

    assert response.message.text == "A warm, upbeat family ad."
    assert len(deltas) > 1 and "".join(deltas) == response.message.text
    assert response.stop_reason == StopReason.END_TURN
    assert response.request_id == "req_fake_1" and response.provider == "anthropic"
    sent = fake_anthropic.requests[0]
    assert sent["stream"] is True and sent["max_tokens"] == 8192
    assert [t["name"] for t in sent["tools"]] == [
        "create_music_draft",
        "get_current_state",
        "search_voices",
    ]
    assert fake_anthropic.request_headers[0]["anthropic-version"]


def test_parallel_tool_use_blocks_come_back_as_calls_and_their_results_go_back_batched(
    fake_anthropic,
):
    fake_anthropic.script(
        claude_turn(
            "Searching and drafting.",
            tool_calls=[
                call("search_voices", {"language": "en", "gender": "female"}),
                call("create_music_draft", {"prompt": "warm acoustic pop, 95 bpm"}),
            ],
            chunk_size=5,
        ),
        claude_turn("Done."),
    )
    adapter = fake_anthropic.adapter()

    first = adapter.generate(ask())
    results = [ToolResultMessage(c.id, c.name, '{"ok": true}') for c in first.message.tool_calls]
    adapter.generate(ask(BRIEF, first.message, *results))

    assert first.stop_reason == StopReason.TOOL_CALLS
    assert [(c.id, c.name, c.arguments) for c in first.message.tool_calls] == [
        ("toolu_fake_1_0", "search_voices", {"language": "en", "gender": "female"}),
        ("toolu_fake_1_1", "create_music_draft", {"prompt": "warm acoustic pop, 95 bpm"}),
    ]
    replay = fake_anthropic.requests[1]["messages"]
    assert [m["role"] for m in replay] == ["user", "assistant", "user"]
    # Anthropic's own ids go back byte for byte, both results in one user message
    assert [b.get("id") for b in replay[1]["content"]] == [None, "toolu_fake_1_0", "toolu_fake_1_1"]
    assert [b["tool_use_id"] for b in replay[2]["content"]] == ["toolu_fake_1_0", "toolu_fake_1_1"]


def test_a_tool_use_block_without_input_deltas_is_an_empty_object(fake_anthropic):
    fake_anthropic.script(claude_turn(tool_calls=[call("get_current_state", raw="")]))

    response = fake_anthropic.adapter().generate(ask())

    (only,) = response.message.tool_calls
    assert only.name == "get_current_state"
    assert only.arguments == {} and only.parse_error is None and only.raw_arguments == ""


def test_tool_json_cut_off_at_max_tokens_comes_back_marked_with_max_tokens(fake_anthropic):
    fake_anthropic.script(
        claude_turn(
            tool_calls=[
                call("search_voices", {"language": "en"}),
                call("create_music_draft", {"prompt": "a very long prompt about music"}),
            ],
            truncate_json_at=20,
        )
    )

    response = fake_anthropic.adapter().generate(ask())

    assert response.stop_reason == StopReason.MAX_TOKENS
    complete, cut = response.message.tool_calls
    assert complete.arguments == {"language": "en"}
    assert cut.parse_error == TRUNCATED_CALL and cut.arguments == {}
    assert cut.raw_arguments == '{"prompt": "a very l'


def test_a_stream_cut_short_is_transient_and_keeps_nothing(fake_anthropic):
    fake_anthropic.script(claude_turn("This reply never ends properly.", cut_after=4))

    with pytest.raises(TransientError, match=r"cut short|connection"):
        fake_anthropic.adapter().generate(ask())


def test_a_non_streamed_request_gets_the_same_message(fake_anthropic):
    fake_anthropic.script(
        claude_turn("Here you go.", tool_calls=[call("search_voices", {"language": "en"})])
    )
    deltas: list[str] = []

    response = fake_anthropic.adapter().generate(ask(stream=False), on_text=deltas.append)

    assert "stream" not in fake_anthropic.requests[0]
    assert deltas == ["Here you go."]
    assert [(c.id, c.arguments) for c in response.message.tool_calls] == [
        ("toolu_fake_1_0", {"language": "en"})
    ]
    assert response.stop_reason == StopReason.TOOL_CALLS and response.usage.exact


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_cache_usage_is_all_input_once_with_reads_and_writes_apart(fake_anthropic, stream):
    # message_delta repeats the cumulative counts: adding them would double the input
    usage = {
        "input_tokens": 50,
        "cache_read_input_tokens": 3000,
        "cache_creation_input_tokens": 200,
        "output_tokens": 40,
    }
    fake_anthropic.script(claude_turn("ok", usage=usage))

    response = fake_anthropic.adapter().generate(ask(stream=stream))

    assert response.usage.prompt_tokens == 3250
    assert response.usage.cached_prompt_tokens == 3000
    assert response.usage.cache_creation_tokens == 200
    assert response.usage.completion_tokens == 40


# --- errors and retries ----------------------------------------------------------------


def test_an_overloaded_error_mid_stream_is_retried_then_succeeds(fake_anthropic):
    fake_anthropic.script(
        claude_turn("Partial text that is thrown away", error_after=4),
        claude_turn("The whole answer."),
    )

    response, attempts, waits = generate_with_retries(fake_anthropic.adapter(), ask())

    assert response.message.text == "The whole answer."
    first = attempts[0].error
    assert isinstance(first, TransientError) and "Overloaded" in str(first)
    assert first.provider_code == "overloaded_error"
    assert [a.error is None for a in attempts] == [False, True] and len(waits) == 1


def test_a_429_waits_for_retry_after_then_succeeds(fake_anthropic):
    fake_anthropic.script(
        claude_error(
            429,
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50,000 input "
            "tokens per minute.",
            headers={"retry-after": "7"},
        ),
        claude_turn("ok"),
    )

    response, attempts, waits = generate_with_retries(fake_anthropic.adapter(), ask())

    assert response.message.text == "ok"
    assert isinstance(attempts[0].error, RateLimited) and attempts[0].error.retry_after == 7.0
    assert waits == [7.0]


def test_529_overloaded_is_retried(fake_anthropic):
    fake_anthropic.script(claude_error(529, "overloaded_error", "Overloaded"), claude_turn("ok"))

    response, attempts, _ = generate_with_retries(fake_anthropic.adapter(), ask())

    assert response.message.text == "ok"
    assert isinstance(attempts[0].error, TransientError) and attempts[0].error.status == 529


@pytest.mark.parametrize(
    "reply",
    [
        claude_error(
            429,
            "rate_limit_error",
            "Your organization has crossed the monthly API usage threshold of its tier.",
            error_code="enforced_spend_limit_reached",
        ),
        claude_error(
            400,
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & "
            "Billing to upgrade or purchase credits.",
        ),
    ],
    ids=["spend-limit-429", "credit-balance-400"],
)
def test_a_spend_limit_is_final_quota_exhausted_without_a_retry(fake_anthropic, reply):
    fake_anthropic.script(reply)

    error, attempts, waits = generate_with_retries(fake_anthropic.adapter(), ask())

    assert isinstance(error, QuotaExhausted)
    assert "ANTHROPIC_API_KEY" in str(error)
    assert len(attempts) == 1 and waits == [] and len(fake_anthropic.requests) == 1


def test_a_400_is_final_and_keeps_the_providers_message(fake_anthropic):
    message = "messages.1.content.1.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
    fake_anthropic.script(claude_error(400, "invalid_request_error", message))

    error, attempts, _ = generate_with_retries(fake_anthropic.adapter(), ask())

    assert isinstance(error, BadRequest) and error.status == 400
    assert message in str(error)
    assert len(attempts) == 1


def test_a_refused_key_names_the_variable_and_never_shows_the_key(fake_anthropic):
    adapter = fake_anthropic.adapter(api_key=SECRET)

    with pytest.raises(AuthenticationFailed) as caught:
        adapter.generate(ask())

    assert "ANTHROPIC_API_KEY" in str(caught.value) and caught.value.status == 401
    assert SECRET not in str(caught.value) and SECRET not in repr(adapter)


def test_no_key_fails_before_any_request(fake_anthropic):
    with pytest.raises(AuthenticationFailed, match="set ANTHROPIC_API_KEY"):
        fake_anthropic.adapter(api_key="").generate(ask())

    assert fake_anthropic.requests == []


# --- the fake server's own checks ------------------------------------------------------


def test_the_fake_server_flags_every_messages_protocol_break():
    body = {
        "max_tokens": 100,
        "messages": [
            {"role": "system", "content": "You are..."},
            {"role": "assistant", "content": [{"type": "text", "text": "hi"}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "functions.search_voices:0",
                        "name": "s",
                        "input": {},
                    },
                    {"type": "tool_use", "id": "dup", "name": "s", "input": {}},
                    {"type": "tool_use", "id": "dup", "name": "s", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "text", "text": "no results"}]},
        ],
    }

    problems = "\n".join(messages_protocol_problems(body))

    assert "role 'system'" in problems
    assert "roles must alternate" in problems
    assert "should match pattern" in problems
    assert "tool_use ids must be unique" in problems
    assert "has no tool_result in the next message" in problems
    assert "must define tools" in problems


# --- routing ---------------------------------------------------------------------------


def test_anthropic_is_a_provider_name_and_routes_to_its_adapter(settings, fake_anthropic):
    settings.ADSTUDIO_PROVIDERS = fake_anthropic.provider_settings()
    settings.ADSTUDIO_PROVIDER_FALLBACKS = []

    (binding,) = providers.route(language="en", requested="anthropic")

    assert "anthropic" in providers.PROVIDER_NAMES
    assert isinstance(binding.provider, AnthropicProvider)
    assert binding.model == ANTHROPIC_TEST_MODEL
    assert binding.provider.base_url == fake_anthropic.base_url


def test_requesting_anthropic_without_a_key_names_the_variable(settings):
    settings.ADSTUDIO_PROVIDERS = {
        "openai": {"api_key": "sk-x", "base_url": "", "model": ""},
        "anthropic": {"api_key": "", "base_url": "", "model": ""},
    }

    with pytest.raises(providers.ProviderUnavailable, match="ANTHROPIC_API_KEY"):
        providers.route(language="en", requested="anthropic")
