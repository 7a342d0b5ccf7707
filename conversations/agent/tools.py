"""The tool registry the agent runs with, and the executor that turns one tool call of
the model into one result the model can read.

Tools are listed in a fixed order and their schemas serialised once, so every request
of every conversation starts with the same bytes (provider prompt caches hit).
"""

from __future__ import annotations

import dataclasses
import json
import logging
from contextlib import nullcontext
from dataclasses import dataclass
from functools import cache
from typing import Any

from django.db import InterfaceError, OperationalError, transaction
from pydantic import BaseModel, ValidationError

from adstudio import observability
from adstudio.db.batch import BatchMark, WriteConflict
from adstudio.tools import Tool, ToolContext, ToolError, ToolResult, WrittenDraft
from drafts.tools import (
    CREATE_MUSIC_DRAFT,
    CREATE_SFX_DRAFT,
    CREATE_VOICE_DRAFT,
    GET_CURRENT_STATE,
    SET_AD_LENGTH,
)
from providers import ToolCall, ToolSpec
from renders.selectors import measured_speech_seconds
from voices.tools import SEARCH_VOICES

logger = logging.getLogger(__name__)


def _state_with_measured_speech(ctx: ToolContext, args: Any) -> dict[str, Any]:
    """get_current_state, and how long the latest voices version's speech ran in a
    scratch track of it, when one was rendered."""
    state = GET_CURRENT_STATE.handler(ctx, args)
    voices = state.get("voices")
    if voices:
        measured = measured_speech_seconds(ad=ctx.ad, voices_version=int(voices["versionId"][1:]))
        if measured is not None:
            voices["measuredDurationS"] = round(measured, 1)
    return state


TOOLS: tuple[Tool, ...] = (
    SEARCH_VOICES,
    CREATE_VOICE_DRAFT,
    CREATE_MUSIC_DRAFT,
    CREATE_SFX_DRAFT,
    SET_AD_LENGTH,
    dataclasses.replace(GET_CURRENT_STATE, handler=_state_with_measured_speech),
)
_BY_NAME = {tool.name: tool for tool in TOOLS}
# Keys a model may invent to point a tool at another ad; the ad comes from the context.
_AD_KEYS = ("adId", "ad_id", "adID")


def writes(call: ToolCall) -> bool:
    """Whether the call's tool writes (an unknown tool writes nothing)."""
    tool = _BY_NAME.get(call.name)
    return tool is not None and tool.writes


@cache
def tool_specs() -> tuple[ToolSpec, ...]:
    return tuple(
        ToolSpec(name=t.name, description=t.description, parameters=t.parameters_schema())
        for t in TOOLS
    )


@dataclass(frozen=True)
class ToolOutcome:
    content: dict[str, Any]
    is_error: bool
    draft: WrittenDraft | None = None  # the draft the call wrote

    @property
    def text(self) -> str:
        """The result as the model reads it: compact JSON (its spaces cost tokens: a
        10-voice search result is a quarter shorter without them), keys sorted."""
        return json.dumps(self.content, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _error(error: str, suggestion: str, **details: Any) -> ToolOutcome:
    return ToolOutcome(ToolError(error, suggestion, **details).as_result(), is_error=True)


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _prepare(call: ToolCall, ctx: ToolContext) -> tuple[Tool, BaseModel] | ToolOutcome:
    """The tool and its validated arguments, or the error result that refuses the call."""
    tool = _BY_NAME.get(call.name)
    if tool is None:
        return _error(f"Unknown tool {call.name!r}.", f"Use one of: {', '.join(_BY_NAME)}.")
    if call.parse_error:
        return _error(
            f"The arguments of {call.name} are not valid JSON ({call.parse_error}).",
            "Send the arguments again as one JSON object matching the tool's schema.",
        )
    arguments = dict(call.arguments)
    for key in _AD_KEYS:
        if key in arguments and str(arguments.pop(key)) != str(ctx.ad.pk):
            return _error(
                f"{call.name} refused: this conversation can only change its own ad.",
                f"Do not pass {key}; the tools always act on the ad of this conversation.",
            )
    try:
        return tool, tool.args_model.model_validate(arguments)
    except ValidationError as exc:
        return _error(
            f"Invalid arguments for {call.name}: {_validation_message(exc)}.",
            "Fix the named fields and call the tool again.",
        )


def _discard_staged(ctx: ToolContext, mark: BatchMark | None) -> None:
    """Rows a failed handler staged (since ``mark``) go the way of its rolled-back
    transaction, and with a draft among them, what the run knew of the latest versions.
    What was staged before it (the reply that made the call) stays."""
    if ctx.batch is not None and mark is not None:
        ctx.batch.rollback_to(mark)
    if ctx.draft_versions is not None:
        ctx.draft_versions.forget()


@observability.traced_tool_call(_BY_NAME)
def execute_tool_call(call: ToolCall, ctx: ToolContext) -> ToolOutcome:
    """Run one call: an unknown tool, unparseable or invalid arguments, a foreign ad and
    a ``ToolError`` all come back as error results the model can act on.

    With the run's batch (``ctx.batch``) a writing handler only reads and stages its rows
    there: the caller writes them with the step's results, in one statement, so they are
    stored exactly when the result is. Without one, the handler runs in a transaction of
    its own. A handler that fails leaves nothing staged or written. A lost database
    connection and a ``WriteConflict`` (the handler read before a concurrent writer
    committed) are raised, being no fault of the call: the caller reads again and calls
    the tool again. A read-only tool runs without a transaction.
    """
    prepared = _prepare(call, ctx)
    if isinstance(prepared, ToolOutcome):
        return prepared
    tool, args = prepared
    mark = ctx.batch.mark() if ctx.batch is not None else None
    try:
        with transaction.atomic() if tool.writes and ctx.batch is None else nullcontext():
            result = tool.handler(ctx, args)
    except ToolError as exc:
        _discard_staged(ctx, mark)
        return ToolOutcome(exc.as_result(), is_error=True)
    except (OperationalError, InterfaceError, WriteConflict):
        # The database went away (a restart, a dropped connection), or the rows were
        # built from a stale read, not the tool's fault: the run resumes from what is
        # stored and calls it again.
        _discard_staged(ctx, mark)
        raise
    except Exception:
        _discard_staged(ctx, mark)
        logger.exception("tool %s failed on call %s", call.name, call.id)
        return _error(
            f"{call.name} failed with an internal error.",
            "Try once more; if it fails again, tell the user and continue without it.",
        )
    if isinstance(result, ToolResult):
        return ToolOutcome(result.content, is_error=False, draft=result.draft)
    return ToolOutcome(result, is_error=False)
