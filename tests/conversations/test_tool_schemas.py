"""The tool schemas providers are sent: lean enough to be paid on every call, and in
OpenAI's strict form where a provider is configured for it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conversations.agent.tools import TOOLS, tool_specs
from conversations.record.tokens import count_tokens
from providers import router
from providers.base import GenerateRequest, UserMessage
from providers.profiles import PROFILES
from providers.schemas import wire_tools
from testbed.fake_openai import turn

# The six schemas, as the SDK serialises them, on every request: the bar is 550
# (703 before the descriptions were tightened and bounds and obvious defaults left out).
LEAN_BUDGET = 550
# The strict form closes every object and lists every property: a budget against bloat.
STRICT_BUDGET = 825  # 800 for the first five; set_ad_length's is 68


def wire_text(tools: list[dict[str, Any]]) -> str:
    return json.dumps(tools, ensure_ascii=False, separators=(",", ":"))


def nodes(schema: Any):
    """Every JSON-schema object in ``schema`` (property schemas, items, anyOf members)."""
    if isinstance(schema, dict):
        yield schema
        for key, value in schema.items():
            if key == "properties":
                for prop in value.values():
                    yield from nodes(prop)
            elif key in ("items", "anyOf"):
                yield from nodes(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from nodes(item)


@pytest.mark.parametrize("profile", ["openai", "qwen", "kimi"])
def test_the_tool_schemas_stay_within_their_token_budget(profile):
    tools = wire_tools(tool_specs(), inline=PROFILES[profile].inline_schema_defs)
    assert len(tools) == 6
    assert count_tokens(wire_text(tools)) <= LEAN_BUDGET


def test_lean_schemas_carry_no_pydantic_noise():
    for spec in tool_specs():
        text = json.dumps(spec.parameters)
        assert '"title"' not in text, spec.name
        assert '"anyOf"' not in text, spec.name
        assert '"$ref"' not in text and '"$defs"' not in text, spec.name
        assert '"default": null' not in text, spec.name
        for node in nodes(spec.parameters):
            assert "type" in node, (spec.name, node)


def test_optional_fields_are_plain_types_and_meaningful_defaults_stay():
    by_name = {spec.name: spec.parameters for spec in tool_specs()}
    track = by_name["create_voice_draft"]["properties"]["tracks"]["items"]
    assert track["required"] == ["voiceId", "text"]
    assert track["properties"]["playAfter"]["type"] == "string"
    music = by_name["create_music_draft"]["properties"]
    # Leaving the provider out is the usual one: its default is not stated on every call.
    assert music["provider"] == {"enum": ["loudly", "mubert"], "type": "string"}
    assert "default" not in track["properties"]["overlap"]
    # Where an effect plays when the model does not say is worth stating.
    placement = by_name["create_sfx_draft"]["properties"]["prompts"]["items"]["properties"]
    assert placement["placement"]["properties"]["type"]["default"] == "end"


def test_strict_form_closes_every_object_and_requires_every_property():
    tools = wire_tools(tool_specs(), inline=False, strict=True)
    assert count_tokens(wire_text(tools)) <= STRICT_BUDGET
    for tool in tools:
        function = tool["function"]
        assert function["strict"] is True
        for node in nodes(function["parameters"]):
            assert "default" not in node
            kind = node.get("type")
            if kind == "object" or (isinstance(kind, list) and "object" in kind):
                assert node["additionalProperties"] is False, function["name"]
                assert node["required"] == list(node["properties"]), function["name"]
    voice = next(t for t in tools if t["function"]["name"] == "create_voice_draft")
    track = voice["function"]["parameters"]["properties"]["tracks"]["items"]
    assert track["properties"]["voiceId"]["type"] == "string"  # required: not nullable
    assert track["properties"]["playAfter"]["type"] == ["string", "null"]
    assert track["properties"]["overlap"]["type"] == ["number", "null"]
    # The lean schemas are left as they were.
    assert "additionalProperties" not in tool_specs()[1].parameters


# What a strict-mode provider sends: every property, null where the model has no value.
STRICT_CALLS = {
    "search_voices": {
        "language": "th", "gender": None, "accent": None, "style": None, "count": None
    },
    "create_voice_draft": {
        "tracks": [{"voiceId": "1", "text": "Hello", "playAfter": None, "overlap": None}]
    },
    "create_music_draft": {"prompt": "calm piano", "provider": None, "duration": None},
    "create_sfx_draft": {
        "prompts": [
            {"description": "whoosh", "placement": None, "duration": None},
            {
                "description": "chime",
                "placement": {"type": "afterVoice", "index": None},
                "duration": 1,
            },
        ]
    },
    "set_ad_length": {"durationSeconds": 20},
    "get_current_state": {},
}  # fmt: skip


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_nulls_from_a_strict_provider_mean_not_given(tool):
    args = tool.args_model.model_validate(STRICT_CALLS[tool.name])
    if tool.name == "search_voices":
        assert (args.gender, args.count) == (None, 10)
    elif tool.name == "create_voice_draft":
        assert (args.tracks[0].playAfter, args.tracks[0].overlap) == (None, 0)
    elif tool.name == "create_music_draft":
        assert (args.provider, args.duration) == ("loudly", None)
    elif tool.name == "create_sfx_draft":
        assert args.prompts[0].placement is None
        assert args.prompts[1].placement.index is None


def test_strict_tools_reach_the_wire_only_for_the_configured_provider(fake_openai, settings):
    """ADSTUDIO_STRICT_TOOLS=openai: OpenAI gets the strict form, Kimi the lean one."""
    settings.ADSTUDIO_PROVIDERS = {
        name: {**entry, "strict_tools": name == "openai"}
        for name, entry in fake_openai.provider_settings().items()
    }
    fake_openai.script(turn("hi"), turn("hi"))
    request = GenerateRequest(
        model="fake", system="s", messages=(UserMessage("hello"),), tools=tool_specs()
    )
    router._build.cache_clear()
    try:
        for name in ("openai", "kimi"):
            router.get_provider(name).generate(request)
    finally:
        router._build.cache_clear()

    openai_tools, kimi_tools = (
        {t["function"]["name"]: t["function"] for t in body["tools"]}
        for body in fake_openai.requests
    )
    assert all(function["strict"] is True for function in openai_tools.values())
    voice = openai_tools["create_voice_draft"]["parameters"]
    assert voice["properties"]["tracks"]["items"]["additionalProperties"] is False
    assert all("strict" not in function for function in kimi_tools.values())
    assert kimi_tools["create_voice_draft"]["parameters"] == tool_specs()[1].parameters


@pytest.mark.django_db(transaction=True)
def test_every_result_a_tool_answers_is_exactly_its_output_model(
    fake_providers, en_ad, voices, user
):
    """The output models are the web client's types of ``tool-<name>`` parts: a key a
    handler adds without its model (or one it drops) fails here."""
    from conversations.models import RunEvent
    from conversations.run_request import RunRequest
    from conversations.services import brief_send, send_message
    from drafts.models import Draft
    from drafts.services import draft_activate
    from testbed.fake_openai import call
    from tests.conversations.story import first_turn, run_of

    fake_providers.script(*first_turn(voices, turn))
    first = run_of(brief_send(request=RunRequest(ad=en_ad)))
    draft_activate(ad=en_ad, draft_id=Draft.objects.get(ad=en_ad, kind="music").pk, by=user)
    long_line = {"voiceId": str(voices[0].pk), "text": "A very long line. " * 60}
    fake_providers.script(
        turn(
            tool_calls=[
                call("create_voice_draft", {"tracks": [long_line]}),
                call("create_music_draft", {"prompt": "brighter pop"}),
            ]
        ),
        turn(tool_calls=[call("get_current_state", {})]),
        turn("Done."),
    )
    run_of(
        send_message(request=RunRequest(conversation=first.conversation, text="longer, brighter"))
    )

    results = [
        (event.data["name"], event.data["result"])
        for event in RunEvent.objects.filter(
            run__conversation=first.conversation, type="tool_call.finished"
        ).order_by("run__created_at", "seq")
        if not event.data["isError"]
    ]
    assert [name for name, _ in results] == [
        "search_voices",
        "create_voice_draft",
        "create_music_draft",
        "create_sfx_draft",
        "create_voice_draft",
        "create_music_draft",
        "get_current_state",
    ]
    for name, result in results:
        next(t for t in TOOLS if t.name == name).output_model.model_validate(result)
    assert results[4][1]["warnings"]  # the optional fields were there to check
    assert results[6][1]["music"]["activeSummary"]
