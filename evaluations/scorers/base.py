"""What every scorer shares: the context it reads, how it says pass or fail, and how it
says it does not apply."""

from __future__ import annotations

from typing import Any

from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from evaluations.cases import AdOutcome, CaseInput, CaseMetadata

Context = EvaluatorContext[CaseInput, AdOutcome, CaseMetadata]
Scorer = Evaluator[CaseInput, AdOutcome, CaseMetadata]
# pydantic-evals records no result for an empty mapping: a scorer that does not apply to
# a case returns it, never a pass, so a pass rate counts only what was checked.
NOT_APPLICABLE: dict[str, Any] = {}


def passed(ok: bool, reason: str) -> EvaluationReason:
    return EvaluationReason(value=ok, reason=reason)


def tracks(payloads: dict[str, dict]) -> list[dict]:
    """The voice tracks of a kind-by-payload mapping (none without a voices draft)."""
    return (payloads.get("voices") or {}).get("voiceTracks", [])


def script_text(payloads: dict[str, dict]) -> str:
    return " ".join(str(t.get("text", "")) for t in tracks(payloads))


def clip(text: str, chars: int = 60) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"
