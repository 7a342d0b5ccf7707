"""The stream accumulator against chunk sequences shaped as each provider really sends them."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from providers.accumulator import StreamAccumulator


def _ids():
    counter = itertools.count(1)
    return lambda: f"call_gen{next(counter)}"


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    *,
    choices: bool = True,
    **top: Any,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "model-x",
        **top,
    }
    data["choices"] = (
        [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}]
        if choices
        else []
    )
    return data


def tc(**fields: Any) -> dict[str, Any]:
    return {"tool_calls": [fields]}


def fn(name: str | None = None, arguments: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if name is not None:
        out["name"] = name
    if arguments is not None:
        out["arguments"] = arguments
    return out


SEARCH = {"language": "th", "gender": "female"}
MUSIC = {"prompt": "warm ukulele, don't overpower the voice"}


def split(value: dict[str, Any], size: int = 7) -> list[str]:
    text = json.dumps(value)
    return [text[i : i + size] for i in range(0, len(text), size)]


def openai_style() -> list[dict]:
    """OpenAI: header (index, id, name, empty args), then fragments by index, usage chunk."""
    chunks = [
        chunk(
            {
                "role": "assistant",
                "content": None,
                **tc(index=0, id="call_a", type="function", function=fn("search_voices", "")),
            }
        )
    ]
    chunks += [chunk(tc(index=0, function=fn(arguments=p))) for p in split(SEARCH)]
    chunks.append(
        chunk(tc(index=1, id="call_b", type="function", function=fn("create_music_draft", "")))
    )
    chunks += [chunk(tc(index=1, function=fn(arguments=p))) for p in split(MUSIC)]
    chunks.append(chunk({}, "tool_calls"))
    chunks.append(
        chunk(
            choices=False,
            usage={
                "prompt_tokens": 1500,
                "completion_tokens": 40,
                "prompt_tokens_details": {"cached_tokens": 1024},
            },
        )
    )
    return chunks


def interleaved() -> list[dict]:
    """Two calls whose fragments alternate, told apart by index only."""
    head = [
        chunk(tc(index=0, id="call_a", type="function", function=fn("search_voices", ""))),
        chunk(tc(index=1, id="call_b", type="function", function=fn("create_music_draft", ""))),
    ]
    a, b = split(SEARCH), split(MUSIC)
    body = []
    for pa, pb in itertools.zip_longest(a, b):
        if pa:
            body.append(chunk(tc(index=0, function=fn(arguments=pa))))
        if pb:
            body.append(chunk(tc(index=1, function=fn(arguments=pb))))
    return [*head, *body, chunk({}, "tool_calls")]


def gemini_whole_calls_one_chunk() -> list[dict]:
    """Gemini compatible endpoint: whole calls in one delta, empty ids, thought signatures."""
    calls = [
        {
            "extra_content": {"google": {"thought_signature": "sig-1"}},
            "function": {"arguments": json.dumps(SEARCH), "name": "search_voices"},
            "id": "",
            "type": "function",
        },
        {
            "function": {"arguments": json.dumps(MUSIC), "name": "create_music_draft"},
            "id": "",
            "type": "function",
        },
    ]
    return [chunk({"role": "assistant", "tool_calls": calls}, "stop")]


def ollama_index_zero() -> list[dict]:
    """Ollama: every parallel call sent whole, each with index 0; finish_reason "stop"."""
    return [
        chunk(
            {
                "role": "assistant",
                "content": "",
                **tc(
                    id="call_o1",
                    index=0,
                    type="function",
                    function=fn("search_voices", json.dumps(SEARCH)),
                ),
            }
        ),
        chunk(
            tc(
                id="call_o2",
                index=0,
                type="function",
                function=fn("create_music_draft", json.dumps(MUSIC)),
            )
        ),
        chunk({"role": "assistant", "content": ""}, "stop"),
    ]


def ollama_index_zero_no_ids() -> list[dict]:
    """Whole calls at index 0 without ids: the second must not be glued onto the first."""
    return [
        chunk(tc(index=0, type="function", function=fn("search_voices", json.dumps(SEARCH)))),
        chunk(tc(index=0, type="function", function=fn("create_music_draft", json.dumps(MUSIC)))),
        chunk({}, "tool_calls"),
    ]


def moonshot_no_index() -> list[dict]:
    """Moonshot's documented schema: no index; ids like functions.name:N; usage in choice."""
    chunks = [
        chunk(tc(id="functions.search_voices:0", type="function", function=fn("search_voices", "")))
    ]
    chunks += [chunk(tc(function=fn(arguments=p))) for p in split(SEARCH)]
    chunks.append(
        chunk(
            tc(
                id="functions.create_music_draft:1",
                type="function",
                function=fn("create_music_draft", ""),
            )
        )
    )
    chunks += [chunk(tc(function=fn(arguments=p))) for p in split(MUSIC)]
    final = chunk({}, "tool_calls")
    final["choices"][0]["usage"] = {
        "prompt_tokens": 900,
        "completion_tokens": 30,
        "total_tokens": 930,
        "cached_tokens": 512,
    }
    return [*chunks, final]


def moonshot_two_calls_one_delta() -> list[dict]:
    """Two index-less calls in one delta: told apart by position and id."""
    return [
        chunk(
            {
                "tool_calls": [
                    {
                        "id": "functions.search_voices:0",
                        "type": "function",
                        "function": fn("search_voices", json.dumps(SEARCH)),
                    },
                    {
                        "id": "functions.create_music_draft:1",
                        "type": "function",
                        "function": fn("create_music_draft", json.dumps(MUSIC)),
                    },
                ]
            }
        ),
        chunk({}, "tool_calls"),
    ]


def kimi_repeated_index() -> list[dict]:
    """Kimi: the second call reuses index 0 with a new id; the new id starts a new call."""
    chunks = [
        chunk(
            tc(
                index=0,
                id="functions.search_voices:0",
                type="function",
                function=fn("search_voices", ""),
            )
        )
    ]
    chunks += [chunk(tc(index=0, function=fn(arguments=p))) for p in split(SEARCH)]
    chunks.append(
        chunk(
            tc(
                index=0,
                id="functions.create_music_draft:1",
                type="function",
                function=fn("create_music_draft", ""),
            )
        )
    )
    chunks += [chunk(tc(index=0, function=fn(arguments=p))) for p in split(MUSIC)]
    return [*chunks, chunk({}, "tool_calls")]


def dashscope_repeated_id() -> list[dict]:
    """DashScope: the id (and type) repeated on every continuation fragment."""
    chunks = [chunk(tc(index=0, id="call_d1", type="function", function=fn("search_voices", "")))]
    chunks += [
        chunk(tc(index=0, id="call_d1", type="function", function=fn(arguments=p)))
        for p in split(SEARCH)
    ]
    chunks.append(
        chunk(tc(index=1, id="call_d2", type="function", function=fn("create_music_draft", "")))
    )
    chunks += [
        chunk(tc(index=1, id="call_d2", type="function", function=fn(arguments=p)))
        for p in split(MUSIC)
    ]
    return [*chunks, chunk({}, "tool_calls")]


def dashscope_blank_id() -> list[dict]:
    """DashScope: the id sent as "" (and name null) on continuation fragments."""
    chunks = [chunk(tc(index=0, id="call_d1", type="function", function=fn("search_voices", "")))]
    chunks += [
        chunk(tc(index=0, id="", type="function", function={"name": None, "arguments": p}))
        for p in split(SEARCH)
    ]
    chunks.append(
        chunk(tc(index=1, id="call_d2", type="function", function=fn("create_music_draft", "")))
    )
    chunks += [
        chunk(tc(index=1, id="", type="function", function={"name": None, "arguments": p}))
        for p in split(MUSIC)
    ]
    return [*chunks, chunk({}, "tool_calls")]


def vllm_type_everywhere() -> list[dict]:
    """vLLM-style: type on every fragment, no id on continuations."""
    chunks = [
        chunk(tc(index=0, id="chatcmpl-tool-1", type="function", function=fn("search_voices")))
    ]
    chunks += [chunk(tc(index=0, type="function", function=fn(arguments=p))) for p in split(SEARCH)]
    chunks.append(
        chunk(tc(index=1, id="chatcmpl-tool-2", type="function", function=fn("create_music_draft")))
    )
    chunks += [chunk(tc(index=1, type="function", function=fn(arguments=p))) for p in split(MUSIC)]
    return [*chunks, chunk({}, "tool_calls")]


CASES = {
    "openai": (openai_style, ["call_a", "call_b"]),
    "interleaved": (interleaved, ["call_a", "call_b"]),
    "gemini_one_chunk_empty_ids": (gemini_whole_calls_one_chunk, ["call_gen1", "call_gen2"]),
    "ollama_index_zero": (ollama_index_zero, ["call_o1", "call_o2"]),
    "ollama_index_zero_no_ids": (ollama_index_zero_no_ids, ["call_gen1", "call_gen2"]),
    "moonshot_no_index": (
        moonshot_no_index,
        ["functions.search_voices:0", "functions.create_music_draft:1"],
    ),
    "moonshot_two_in_one_delta": (
        moonshot_two_calls_one_delta,
        ["functions.search_voices:0", "functions.create_music_draft:1"],
    ),
    "kimi_repeated_index": (
        kimi_repeated_index,
        ["functions.search_voices:0", "functions.create_music_draft:1"],
    ),
    "dashscope_repeated_id": (dashscope_repeated_id, ["call_d1", "call_d2"]),
    "dashscope_blank_id": (dashscope_blank_id, ["call_d1", "call_d2"]),
    "vllm_type_everywhere": (vllm_type_everywhere, ["chatcmpl-tool-1", "chatcmpl-tool-2"]),
}


@pytest.mark.parametrize("case", CASES)
def test_two_parallel_calls_come_out_whole_and_separate(case):
    make_chunks, expected_ids = CASES[case]
    acc = StreamAccumulator(id_factory=_ids())
    for data in make_chunks():
        acc.add_chunk(data)
    result = acc.result()

    assert acc.finished
    assert [c.name for c in result.tool_calls] == ["search_voices", "create_music_draft"]
    assert [c.id for c in result.tool_calls] == expected_ids
    assert [c.arguments for c in result.tool_calls] == [SEARCH, MUSIC]
    assert [c.raw_arguments for c in result.tool_calls] == [json.dumps(SEARCH), json.dumps(MUSIC)]
    assert all(c.parse_error is None and not c.repaired for c in result.tool_calls)


def test_gemini_thought_signature_is_kept_with_its_call():
    acc = StreamAccumulator(id_factory=_ids())
    for data in gemini_whole_calls_one_chunk():
        acc.add_chunk(data)
    result = acc.result()

    assert result.tool_call_extras == {
        "call_gen1": {"extra_content": {"google": {"thought_signature": "sig-1"}}}
    }


@pytest.mark.parametrize(
    ("make_chunks", "usage"),
    [
        (openai_style, {"prompt_tokens": 1500, "cached": 1024}),
        (moonshot_no_index, {"prompt_tokens": 900, "cached": 512}),
    ],
)
def test_usage_is_found_at_top_level_or_inside_the_choice(make_chunks, usage):
    from providers.chat_format import usage_from

    acc = StreamAccumulator()
    for data in make_chunks():
        acc.add_chunk(data)
    parsed = usage_from(acc.result().usage)

    assert parsed is not None
    assert parsed.prompt_tokens == usage["prompt_tokens"]
    assert parsed.cached_prompt_tokens == usage["cached"]


def test_text_deltas_reach_the_callback_as_they_arrive():
    seen: list[str] = []
    acc = StreamAccumulator(on_text=seen.append)
    acc.add_chunk(chunk({"role": "assistant", "content": ""}))
    acc.add_chunk(chunk({"content": "Here is "}))
    assert seen == ["Here is "]  # delivered before the stream is over
    acc.add_chunk(chunk({"content": "your ad."}))
    acc.add_chunk(chunk({}, "stop"))

    assert seen == ["Here is ", "your ad."]
    assert acc.result().text == "Here is your ad."
    assert acc.result().tool_calls == ()


def test_zero_argument_call_gets_an_empty_object():
    acc = StreamAccumulator()
    acc.add_chunk(
        chunk(tc(index=0, id="call_z", type="function", function=fn("get_current_state", "")))
    )
    acc.add_chunk(chunk({}, "tool_calls"))
    (call,) = acc.result().tool_calls

    assert call.name == "get_current_state"
    assert call.arguments == {}
    assert call.raw_arguments == ""
    assert call.parse_error is None


def test_zero_argument_call_then_another_call_at_the_same_index():
    acc = StreamAccumulator(id_factory=_ids())
    acc.add_chunk(chunk(tc(index=0, type="function", function=fn("get_current_state", ""))))
    acc.add_chunk(
        chunk(tc(index=0, type="function", function=fn("search_voices", json.dumps(SEARCH))))
    )
    acc.add_chunk(chunk({}, "tool_calls"))

    calls = acc.result().tool_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_current_state", {}),
        ("search_voices", SEARCH),
    ]


def test_reasoning_content_is_collected_apart_from_text():
    acc = StreamAccumulator()
    acc.add_chunk(chunk({"role": "assistant", "reasoning_content": "The brief is Thai, "}))
    acc.add_chunk(chunk({"reasoning_content": "so search th voices."}))
    acc.add_chunk(
        chunk(tc(index=0, id="functions.search_voices:0", function=fn("search_voices", "{}")))
    )
    acc.add_chunk(chunk({}, "tool_calls"))
    result = acc.result()

    assert result.reasoning_content == "The brief is Thai, so search th voices."
    assert result.text == ""


def test_arguments_sent_as_an_object_are_accepted():
    acc = StreamAccumulator()
    acc.add_chunk(
        chunk(tc(index=0, id="c1", function={"name": "search_voices", "arguments": SEARCH}))
    )
    acc.add_chunk(chunk({}, "tool_calls"))

    assert acc.result().tool_calls[0].arguments == SEARCH


def test_malformed_arguments_are_repaired_and_kept_raw():
    raw = "{'language': 'th', 'style': \"don't shout\",}"
    acc = StreamAccumulator()
    acc.add_chunk(chunk(tc(index=0, id="c1", function=fn("search_voices", raw))))
    acc.add_chunk(chunk({}, "tool_calls"))
    (call,) = acc.result().tool_calls

    assert call.arguments == {"language": "th", "style": "don't shout"}
    assert call.raw_arguments == raw
    assert call.repaired


def test_a_stream_without_finish_reason_is_not_finished():
    acc = StreamAccumulator()
    for data in openai_style()[:4]:
        acc.add_chunk(data)

    assert not acc.finished


def test_duplicate_ids_from_the_provider_are_made_unique():
    acc = StreamAccumulator(id_factory=_ids())
    acc.add_chunk(
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_same", "function": fn("search_voices", "{}")},
                    {"index": 1, "id": "call_same", "function": fn("create_music_draft", "{}")},
                ]
            }
        )
    )
    acc.add_chunk(chunk({}, "tool_calls"))
    ids = [c.id for c in acc.result().tool_calls]

    assert len(ids) == 2
    assert len(set(ids)) == 2
