"""What a tool is: a name, a description written for the model, a pydantic argument model
(its JSON schema is what the provider sees) and a handler.

Error contract for handlers: return a JSON-serialisable dict on success (or a
``ToolResult``, when the call wrote a draft the run must report); raise
``ToolError`` for anything the model can fix (it sees ``{"error", "suggestion", ...}``
and the run goes on); any other exception is a bug, logged by the executor and reported
to the model as an internal error.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, model_validator

from adstudio.json_schema import absent_not_default, lean_schema

if TYPE_CHECKING:
    from adstudio.db.batch import Batch


# The tools live in the apps; what a call is handed is described here by what the tools
# use of it, so the project package names no app (``drafts.models.Ad`` and
# ``drafts.services.LatestVersions`` have these members; tests/adstudio/test_tools.py
# checks that they still do).
@runtime_checkable
class ToolAd(Protocol):
    """The ad a call works on: the tools read its key, language and length, and
    ``set_ad_length`` sets the length the run's later calls measure against."""

    pk: Any
    language: str
    duration_s: int


@runtime_checkable
class StagedDraft(Protocol):
    """A draft version a call staged, as the latest-versions holder records it."""

    pk: Any
    kind: str
    version: int


@runtime_checkable
class DraftVersions(Protocol):
    """The ad's latest draft version of each kind as the run knows it, so a writing call
    need not read it; forgotten when a staged draft is discarded (then versions are read)."""

    def of(self, kind: str) -> tuple[uuid.UUID | None, int | None] | None:
        """(id, version) of the latest draft of ``kind``; (None, None) when there is
        none; None when not known."""
        ...

    def staged(self, draft: StagedDraft) -> None: ...

    def forget(self) -> None: ...


@dataclass(frozen=True)
class ToolContext:
    """Who is calling: the conversation's ad, never an ad named in the model's arguments."""

    ad: ToolAd
    run_id: uuid.UUID | None = None
    tool_call_id: str = ""
    # Where a writing tool stages its rows, to be written in one statement with the
    # recording of its step's results, without a transaction; None: rows are written at
    # once, inside the call's transaction. Holds the step's earlier calls' rows too (a
    # tool reads them there: ``Batch.staged``); a failed handler's own are discarded.
    batch: Batch | None = None
    # The ad's latest draft versions as the run knows them; None: they are read.
    draft_versions: DraftVersions | None = None


class ToolError(Exception):
    """A failure the model can act on; ``details`` are merged into the result it sees."""

    def __init__(self, error: str, suggestion: str = "", **details: Any) -> None:
        super().__init__(error)
        self.error = error
        self.suggestion = suggestion
        self.details = details

    def as_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {"error": self.error}
        if self.suggestion:
            result["suggestion"] = self.suggestion
        result.update(self.details)
        return result


@dataclass(frozen=True)
class WrittenDraft:
    """A draft a tool call wrote, as the run reports it."""

    kind: str
    version: str  # its label: "v2"
    id: str


@dataclass(frozen=True)
class ToolResult:
    """A handler's result and the draft it wrote: the run reports the draft from this,
    never from the keys of the result the model reads."""

    content: dict[str, Any]
    draft: WrittenDraft | None = None


class ToolArgs(BaseModel):
    """Base of the tools' argument models, for what models send in practice: stray keys
    are ignored (failing the whole call over one costs a round), whitespace around a value
    means nothing, and null means "not given" (providers in strict mode send null for
    every optional field left out), so a default applies."""

    model_config = ConfigDict(extra="ignore", str_strip_whitespace=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_not_given(cls, data: Any) -> Any:
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if value is not None}
        return data


class ToolOutput(BaseModel):
    """Base of the tools' result models: what a successful call answers, exactly (no key
    left out), for web clients' types (``conversations.web.ui_types``); the handlers build
    plain dicts, which the suite checks against these."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=absent_not_default)


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args_model: type[BaseModel]
    handler: Callable[[ToolContext, Any], dict[str, Any] | ToolResult]
    output_model: type[ToolOutput]
    # A tool that only reads runs without a transaction of its own (two round trips
    # fewer); one that writes runs in one with the recording of its result.
    writes: bool = True

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments, as sent to providers (lean: see
        ``adstudio.json_schema``)."""
        return lean_schema(self.args_model)
