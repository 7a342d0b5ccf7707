"""The OpenAI-compatible adapter, driving the real openai SDK over HTTP against the fake."""

from __future__ import annotations

import json

import pytest

from providers import chat_format
from providers.base import (
    AssistantMessage,
    AuthenticationFailed,
    BadRequest,
    ContentFiltered,
    GenerateOptions,
    GenerateRequest,
    QuotaExhausted,
    StopReason,
    ToolResultMessage,
    ToolSpec,
    TransientError,
    UserMessage,
)
from providers.openai_compat import sse_data
from testbed.fake_openai import TEST_API_KEY, call, error_turn, raw_turn, turn

TOOLS = (
    ToolSpec("search_voices", "Search voices.", {"type": "object", "properties": {}}),
    ToolSpec("create_music_draft", "Music draft.", {"type": "object", "properties": {}}),
)
SEARCH = {"language": "th", "gender": "female"}
MUSIC = {"prompt": "warm ukulele, don't overpower the voice", "duration": 30}


def ask(*, stream: bool = True, tools=TOOLS, messages=None, **options) -> GenerateRequest:
    return GenerateRequest(
        model="gpt-test",
        system="You are the creative director.",
        messages=messages or (UserMessage("Brief\nLanguage: th\nDuration: 30 s"),),
        tools=tools,
        options=GenerateOptions(stream=stream, **options),
    )


def two_calls(**quirks):
    return turn(
        tool_calls=[call("search_voices", SEARCH), call("create_music_draft", MUSIC)], **quirks
    )


def test_streamed_text_and_calls_with_usage_and_request_id(fake_openai):
    fake_openai.script(
        turn(
            "Let me find Thai voices.",
            tool_calls=[call("search_voices", SEARCH)],
            cached_tokens=1024,
        )
    )
    deltas: list[str] = []

    response = fake_openai.adapter("openai").generate(ask(), on_text=deltas.append)

    assert len(deltas) > 1 and "".join(deltas) == "Let me find Thai voices."
    assert response.message.text == "Let me find Thai voices."
    (search,) = response.message.tool_calls
    assert (search.id, search.name, search.arguments) == ("call_fake_1_0", "search_voices", SEARCH)
    assert response.stop_reason is StopReason.TOOL_CALLS
    assert response.usage.cached_prompt_tokens == 1024
    assert response.usage.prompt_tokens > 0 and response.usage.exact
    assert response.request_id == "req_fake_1"
    assert (response.provider, response.model) == ("openai", "gpt-test")
    body = fake_openai.requests[0]
    assert body["messages"][0] == {"role": "system", "content": "You are the creative director."}
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert fake_openai.request_headers[0]["authorization"] == f"Bearer {TEST_API_KEY}"


QUIRKS = {
    "no ids": {"ids": "missing"},
    "empty ids, one chunk, no index": {"ids": "empty", "one_chunk": True, "index": "missing"},
    "every call whole at index 0 (ollama)": {"index": "zero", "whole_calls": True},
    "index 0 reused with new ids (kimi)": {"index": "zero"},
    "id repeated on continuations (dashscope)": {"ids": "repeat"},
    "id blank on continuations (dashscope)": {"ids": "blank_continuation"},
    "interleaved fragments": {"interleave": True, "chunk_size": 5},
    "type on every fragment": {"type_every_fragment": True},
    "no index, fragments in order": {"index": "missing"},
    "finish reason stop despite calls": {"finish_reason": "stop"},
    "usage inside the choice": {"usage_in_choice": True},
}


@pytest.mark.parametrize("quirk", QUIRKS)
def test_stream_quirks_assemble_two_separate_calls(fake_openai, quirk):
    fake_openai.script(two_calls(**QUIRKS[quirk]))

    response = fake_openai.adapter("openai").generate(ask())

    calls = response.message.tool_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("search_voices", SEARCH),
        ("create_music_draft", MUSIC),
    ]
    assert all(c.id for c in calls) and len({c.id for c in calls}) == 2
    assert response.stop_reason is StopReason.TOOL_CALLS
    assert response.usage.exact and response.usage.prompt_tokens > 0


def test_non_streaming_response(fake_openai):
    fake_openai.script(turn("All three drafts are ready.", reasoning_content="checked drafts"))
    deltas: list[str] = []

    response = fake_openai.adapter("openai").generate(ask(stream=False), on_text=deltas.append)

    assert "stream" not in fake_openai.requests[0]
    assert deltas == ["All three drafts are ready."]
    assert response.message.text == "All three drafts are ready."
    assert response.message.provider_data["reasoning_content"] == "checked drafts"
    assert response.stop_reason is StopReason.END_TURN


def test_a_streamed_request_answered_with_one_json_completion_is_read_as_it(fake_openai):
    """Some OpenAI-compatible servers ignore "stream": true and send a chat.completion."""
    fake_openai.script(
        two_calls(ignore_stream=True, usage={"prompt_tokens": 41, "completion_tokens": 9})
    )
    deltas: list[str] = []

    response = fake_openai.adapter("openai").generate(ask(stream=True), on_text=deltas.append)

    assert fake_openai.requests[0]["stream"] is True
    assert [(c.name, c.arguments) for c in response.message.tool_calls] == [
        ("search_voices", SEARCH),
        ("create_music_draft", MUSIC),
    ]
    assert response.stop_reason is StopReason.TOOL_CALLS
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (41, 9)
    assert response.request_id == "req_fake_1"


def test_a_streamed_request_answered_with_a_json_error_body_is_classified(fake_openai):
    body = {"error": {"message": "model overloaded", "type": "server_error"}}
    fake_openai.script(raw_turn(json.dumps(body), content_type="application/json; charset=utf-8"))

    with pytest.raises(TransientError, match="model overloaded"):
        fake_openai.adapter("openai").generate(ask(stream=True))


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_calls_reuse_one_connection(fake_openai, stream):
    # A streamed reply is read to its end, so its connection goes back to the pool:
    # closing it after [DONE] would cost a new connection (and TLS handshake) per call.
    fake_openai.script(*(turn(f"answer {n}") for n in range(3)))
    adapter = fake_openai.adapter("openai")

    answers = [adapter.generate(ask(stream=stream)).message.text for _ in range(3)]

    assert answers == ["answer 0", "answer 1", "answer 2"]
    assert fake_openai.connections == 1


def test_the_request_body_is_the_payload_as_built(fake_openai):
    fake_openai.script(turn("ok"))
    request = ask(messages=(UserMessage("Brief"),))
    adapter = fake_openai.adapter("openai")
    expected = chat_format.build_payload(request, adapter.profile, provider="openai", stream=True)

    adapter.generate(request)

    assert fake_openai.requests[0] == json.loads(json.dumps(expected))


@pytest.mark.parametrize(
    ("lines", "events"),
    [
        (["data: {}", "", "data: [DONE]", ""], ["{}", "[DONE]"]),
        # Comments (keep-alives), event names and ids are not data.
        ([": processing", "", "event: chunk", "id: 7", "data: {}", ""], ["{}"]),
        # Several data lines are one event, joined by newlines; no space after the colon.
        (['data: {"a":', "data:1}", ""], ['{"a":\n1}']),
        # A last event without its blank line still counts.
        (["data: {}"], ["{}"]),
    ],
)
def test_server_sent_events_are_read_as_the_format_says(lines, events):
    assert list(sse_data(lines)) == events


def test_history_is_replayed_so_the_server_accepts_it(fake_openai):
    fake_openai.script(
        turn(tool_calls=[call("search_voices", raw="{'language': 'th',}", id="")]),
        turn("Found two voices."),
    )
    adapter = fake_openai.adapter("openai")
    first = adapter.generate(ask())
    (search,) = first.message.tool_calls

    second = adapter.generate(
        ask(
            messages=(
                UserMessage("Brief\nLanguage: th\nDuration: 30 s"),
                first.message,
                ToolResultMessage(search.id, "search_voices", '{"voices": []}'),
            )
        )
    )

    assert search.id.startswith("call_") and search.repaired
    replayed = fake_openai.requests[1]["messages"][2]["tool_calls"][0]
    assert replayed["id"] == search.id
    assert json.loads(replayed["function"]["arguments"]) == {"language": "th"}
    assert second.message.text == "Found two voices."


def test_stream_cut_mid_call_is_transient_and_keeps_nothing(fake_openai):
    fake_openai.script(two_calls(cut_after=4))

    with pytest.raises(TransientError) as caught:
        fake_openai.adapter("openai").generate(ask())

    assert caught.value.retryable
    assert caught.value.provider == "openai"


def test_stream_without_finish_reason_is_transient(fake_openai):
    fake_openai.script(two_calls(no_finish=True))

    with pytest.raises(TransientError, match="without a finish reason"):
        fake_openai.adapter("openai").generate(ask())


def test_error_object_after_http_200_is_transient(fake_openai):
    fake_openai.script(two_calls(error_after=3))

    with pytest.raises(TransientError, match="after HTTP 200"):
        fake_openai.adapter("openai").generate(ask())


def test_moderation_error_mid_stream_is_content_filtered(fake_openai):
    fake_openai.script(
        turn(
            "Some text",
            error_after=2,
            stream_error={
                "code": "data_inspection_failed",
                "message": "Output data may contain inappropriate content.",
            },
        )
    )

    with pytest.raises(ContentFiltered):
        fake_openai.adapter("openai").generate(ask())


def test_insufficient_quota_is_final(fake_openai):
    fake_openai.script(
        error_turn(
            429,
            {
                "error": {
                    "message": "You exceeded your current quota, please check your plan.",
                    "type": "insufficient_quota",
                    "code": "insufficient_quota",
                }
            },
        )
    )

    with pytest.raises(QuotaExhausted, match="OPENAI_API_KEY"):
        fake_openai.adapter("openai").generate(ask())


def test_400_is_a_bad_request(fake_openai):
    fake_openai.script(
        error_turn(400, {"error": {"message": "Invalid schema for function", "code": None}})
    )

    with pytest.raises(BadRequest, match="Invalid schema"):
        fake_openai.adapter("openai").generate(ask())


def test_rejected_key_names_the_env_var_and_never_leaks_the_key(fake_openai):
    fake_openai.script(
        error_turn(
            401,
            {
                "error": {
                    "message": f"Incorrect API key provided: {TEST_API_KEY}.",
                    "code": "invalid_api_key",
                }
            },
        )
    )
    adapter = fake_openai.adapter("qwen")

    with pytest.raises(AuthenticationFailed) as caught:
        adapter.generate(ask())

    assert "DASHSCOPE_API_KEY" in str(caught.value)
    assert TEST_API_KEY not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert TEST_API_KEY not in repr(adapter)


def test_missing_key_fails_without_a_request(fake_openai):
    adapter = fake_openai.adapter("kimi", api_key="")

    with pytest.raises(AuthenticationFailed, match="MOONSHOT_API_KEY"):
        adapter.generate(ask())
    assert fake_openai.requests == []


def test_text_only_answer_without_tools(fake_openai):
    fake_openai.script(turn("Hello!"))

    response = fake_openai.adapter("openai").generate(ask(tools=()))

    assert "tools" not in fake_openai.requests[0]
    assert response.message == AssistantMessage(text="Hello!")
    assert response.stop_reason is StopReason.END_TURN


def test_the_real_endpoint_is_unreachable_from_tests():
    """The suite's loopback guard turns a real provider call into a transient failure."""
    from providers.openai_compat import OpenAICompatProvider
    from providers.profiles import OPENAI

    adapter = OpenAICompatProvider(profile=OPENAI, api_key="sk-not-a-real-key", timeout=2.0)

    with pytest.raises(TransientError, match="connection failed"):
        adapter.generate(ask())
    assert adapter.base_url == "https://api.openai.com/v1"
