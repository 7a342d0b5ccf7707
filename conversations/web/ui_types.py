"""The shapes a web client is sent, as pydantic models: this API's ``UIMessage`` (its
metadata, its data parts and a ``tool-<name>`` part per tool, whose input and output are
the tools' own models) and ``ModelMessage``.

They type the history's OpenAPI operations (drf-spectacular reads pydantic), and they are
the source of ``clients/adstudio-chat.ts``, the TypeScript module a ``useChat`` page
imports (``manage.py chat_types``, then ``make chat-types``), so a page needs no
hand-written types.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAliasType, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from adstudio.json_schema import absent_not_default
from adstudio.tools import Tool
from conversations.agent.tools import TOOLS
from conversations.models import RunStatus


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=absent_not_default)


class RunUsage(_Shape):
    inputTokens: int
    outputTokens: int
    totalTokens: int


class RunMetadata(_Shape):
    """An assistant message's ``metadata``: its run from the first chunk; its status,
    usage and (failed) error from the last."""

    runId: str
    status: Literal[tuple(RunStatus.values)] = Field(default=None)  # type: ignore[valid-type]
    usage: RunUsage = Field(default=None)
    error: str = Field(default=None, description="A failed run's error, as the stream said it.")


class BriefData(_Shape):
    """The brief as the director was given it (a ``data-brief`` part)."""

    client: str
    audience: str = Field(default=None)
    language: str
    market: str = Field(default=None)
    durationSeconds: int
    context: str = Field(default=None)


class DraftData(_Shape):
    """A draft a tool call wrote (a ``data-draft`` part)."""

    kind: Literal["voices", "music", "sfx"]
    version: str = Field(description='Its label, e.g. "v2".')
    id: str | None = Field(description="The draft's id (GET /api/drafts/{id}/).")
    toolCallId: str


class DataParts(_Shape):
    """The data parts by name: ``data-<name>`` parts' ``data``."""

    draft: DraftData
    brief: BriefData


class TextMarks(_Shape):
    abandoned: bool = Field(
        description="Text of a reply its provider cut short and was asked again for: not "
        "part of the answer."
    )


class TextMetadata(_Shape):
    adstudio: TextMarks


class TextPart(_Shape):
    type: Literal["text"]
    text: str
    state: Literal["streaming", "done"] = Field(default=None)
    providerMetadata: TextMetadata = Field(default=None)


class StepStartPart(_Shape):
    type: Literal["step-start"]


class DraftPart(_Shape):
    type: Literal["data-draft"]
    id: str
    data: DraftData


class BriefPart(_Shape):
    type: Literal["data-brief"]
    id: str
    data: BriefData


def _camel(name: str) -> str:
    return "".join(word.capitalize() for word in name.split("_"))


# Per tool: its input and output (``ToolTypes``), and its part in a message, one model per
# state, as the AI SDK types a tool part.
ToolTypes = create_model(
    "ToolTypes",
    __base__=_Shape,
    __doc__="Each tool's input (what the model sent) and output (what it answered).",
    **{
        tool.name: (
            create_model(
                f"{_camel(tool.name)}Types",
                __base__=_Shape,
                input=(tool.args_model, ...),
                output=(tool.output_model, ...),
            ),
            ...,
        )
        for tool in TOOLS
    },
)


def _tool_part(tool: Tool) -> Any:
    """The ``tool-<name>`` part of ``tool``, by its state."""
    name = _camel(tool.name)
    common = {
        "__base__": _Shape,
        "type": (Literal[f"tool-{tool.name}"], ...),
        "toolCallId": (str, ...),
        "input": (tool.args_model, Field(description="As the model sent it.")),
    }
    called = create_model(f"{name}Called", state=(Literal["input-available"], ...), **common)
    answered = create_model(
        f"{name}Answered",
        state=(Literal["output-available"], ...),
        output=(tool.output_model, ...),
        **common,
    )
    failed = create_model(
        f"{name}Failed",
        state=(Literal["output-error"], ...),
        errorText=(str, Field(description="What went wrong and what to do about it.")),
        **{
            **common,
            "input": (
                dict[str, Any],
                Field(description="As the model sent it: not always valid for the tool."),
            ),
        },
    )
    # Named, so that the parts' discriminator maps ``tool-<name>`` to it: a schema with
    # no mapping for a value is checked against the schema of that name, which is none.
    return TypeAliasType(
        f"{name}Part",
        Annotated[Union[called, answered, failed], Field(discriminator="state")],  # noqa: UP007
    )


Part = Annotated[
    Union[(TextPart, StepStartPart, DraftPart, BriefPart, *(_tool_part(tool) for tool in TOOLS))],
    Field(discriminator="type"),
]


class UIMessage(_Shape):
    """useChat's message: the user's, or a run's reply (``run-<runId>``)."""

    id: str
    role: Literal["user", "assistant"]
    metadata: RunMetadata = Field(default=None)
    parts: list[Part]


class ChatTypes(_Shape):
    """What ``clients/adstudio-chat.ts`` declares: ``UIMessage<RunMetadata, DataParts,
    ToolTypes>``'s arguments."""

    metadata: RunMetadata
    dataParts: DataParts
    tools: ToolTypes  # type: ignore[valid-type]


# --- ModelMessage (``?format=model``) --------------------------------------------------
# The AI SDK's ``ModelMessage`` (``@ai-sdk/provider-utils``): a union by ``role``, each
# role's content the parts this API sends of those the SDK allows, so that a page's
# history is assignable to ``ModelMessage[]`` as generated from the schema, with no cast.

type JsonValue = dict[str, JsonValue] | list[JsonValue] | str | int | float | bool | None


class ModelTextContent(_Shape):
    type: Literal["text"]
    text: str


class ModelToolCall(_Shape):
    type: Literal["tool-call"]
    toolCallId: str
    toolName: str
    input: dict[str, Any]


class JsonToolOutput(_Shape):
    """What the tool answered."""

    type: Literal["json"]
    value: JsonValue


class ErrorJsonToolOutput(_Shape):
    """The error the tool answered with (``{"error": ...}``)."""

    type: Literal["error-json"]
    value: JsonValue


class ModelToolResult(_Shape):
    type: Literal["tool-result"]
    toolCallId: str
    toolName: str
    output: Annotated[JsonToolOutput | ErrorJsonToolOutput, Field(discriminator="type")]


class SystemModelMessage(_Shape):
    """Instructions (this API's histories hold none: the system prompt is not a turn)."""

    role: Literal["system"]
    content: str


class UserModelMessage(_Shape):
    """What the person wrote (the brief, in a generation's first message)."""

    role: Literal["user"]
    content: str


class AssistantModelMessage(_Shape):
    """A reply: its text and its tool calls."""

    role: Literal["assistant"]
    content: list[Annotated[ModelTextContent | ModelToolCall, Field(discriminator="type")]]


class ToolModelMessage(_Shape):
    """The results of a reply's tool calls."""

    role: Literal["tool"]
    content: list[ModelToolResult]


type ModelMessage = Annotated[
    SystemModelMessage | UserModelMessage | AssistantModelMessage | ToolModelMessage,
    Field(discriminator="role"),
]


class _Page(_Shape):
    count: int
    next: str | None
    previous: str | None


class UIMessagePage(_Page):
    results: list[UIMessage]


class ModelMessagePage(_Page):
    results: list[ModelMessage]
