"""The shapes of conversations.web.ui_types as the schema has them: a ``tool-<name>`` part
for every tool the director has (``conversations.agent.tools.TOOLS``), mapped by the parts'
discriminator; ``ModelMessage`` a union by role, as the AI SDK's."""

from __future__ import annotations

import pytest
from drf_spectacular.generators import SchemaGenerator
from pydantic import TypeAdapter, ValidationError

from conversations.agent.tools import TOOLS
from conversations.web.ui_types import ModelMessage, UIMessage


@pytest.fixture(scope="module")
def schemas() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]


def ref(name: str) -> str:
    return f"#/components/schemas/{name}"


def test_every_tool_has_its_part_in_the_schema_of_a_messages_parts(schemas):
    parts = schemas["UIMessage"]["properties"]["parts"]["items"]
    mapping = parts["discriminator"]["mapping"]
    tool_parts = {value: target for value, target in mapping.items() if value.startswith("tool-")}

    assert len(TOOLS) >= 6 and set(tool_parts) == {f"tool-{tool.name}" for tool in TOOLS}
    assert set(mapping.values()) == {option["$ref"] for option in parts["oneOf"]}
    for tool in TOOLS:
        part = schemas[tool_parts[f"tool-{tool.name}"].removeprefix(ref(""))]
        states = {
            state: target.removeprefix(ref(""))
            for state, target in part["discriminator"]["mapping"].items()
        }
        assert set(states) == {"input-available", "output-available", "output-error"}
        for name in states.values():
            assert schemas[name]["properties"]["type"]["enum"] == [f"tool-{tool.name}"]


@pytest.mark.parametrize("tool", TOOLS, ids=lambda tool: tool.name)
def test_a_failed_call_of_every_tool_is_a_valid_part(tool):
    message = {
        "id": "run-1",
        "role": "assistant",
        "parts": [
            {
                "type": f"tool-{tool.name}",
                "toolCallId": "call-1",
                "state": "output-error",
                "input": {},
                "errorText": "No.",
            }
        ],
    }

    assert UIMessage.model_validate(message).parts[0].type == f"tool-{tool.name}"
    with pytest.raises(ValidationError):
        UIMessage.model_validate(
            {**message, "parts": [{**message["parts"][0], "type": "tool-nope"}]}
        )


def test_a_model_message_is_one_schema_per_role(schemas):
    union = schemas["ModelMessage"]

    assert union["discriminator"]["propertyName"] == "role"
    assert union["discriminator"]["mapping"] == {
        role: ref(f"{role.capitalize()}ModelMessage")
        for role in ("system", "user", "assistant", "tool")
    }
    for role in ("system", "user", "assistant", "tool"):
        assert schemas[f"{role.capitalize()}ModelMessage"]["properties"]["role"]["enum"] == [role]
    results = schemas["ModelMessagePage"]["properties"]["results"]
    assert results["items"] == {"$ref": ref("ModelMessage")}


def test_each_role_takes_only_its_own_content():
    messages = TypeAdapter(list[ModelMessage])
    call = {"type": "tool-call", "toolCallId": "c", "toolName": "search_voices", "input": {}}
    result = {
        "type": "tool-result",
        "toolCallId": "c",
        "toolName": "search_voices",
        "output": {"type": "json", "value": {"voices": [], "count": 0}},
    }

    messages.validate_python(
        [
            {"role": "user", "content": "Brief"},
            {"role": "assistant", "content": [{"type": "text", "text": "Looking."}, call]},
            {"role": "tool", "content": [result]},
        ]
    )
    for wrong in (
        {"role": "user", "content": [call]},
        {"role": "tool", "content": [call]},
        {"role": "assistant", "content": [result]},
        {"role": "tool", "content": [{**result, "output": {"type": "text", "value": 1}}]},
    ):
        with pytest.raises(ValidationError):
            messages.validate_python([wrong])
