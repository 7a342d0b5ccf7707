"""Did the case run, and is the ad whole: every turn succeeded, every kind drafted, no
tool call failed; and what it cost."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_evals.evaluators import EvaluationReason

from evaluations.cases import KINDS
from evaluations.scorers.base import Context, Scorer, passed


@dataclass
class AllKindsDrafted(Scorer):
    """Voices, music and sound effects: an ad needs all three."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        missing = [kind for kind in KINDS if kind not in ctx.output.drafts]
        if missing:
            return passed(False, f"no {', '.join(missing)} draft")
        return passed(True, "voices, music and sfx drafted")


@dataclass
class RunsSucceeded(Scorer):
    """Every turn's run ended succeeded."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        turns = ctx.output.turns
        failed = [
            f"turn {n}: {t.status} {t.error_code}".strip()
            for n, t in enumerate(turns, 1)
            if t.status != "succeeded"
        ]
        if not turns:
            return passed(False, "no run")
        return passed(not failed, "; ".join(failed) or f"{len(turns)} of {len(turns)} succeeded")


@dataclass
class CleanToolCalls(Scorer):
    """No tool call refused or failed, and no arguments repaired before they parsed. A
    voice search that matched nothing is not a failed call (the catalogue lacks what the
    brief's market would have); the reason counts those apart."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        errors = sum(t.tool_errors for t in ctx.output.turns)
        repairs = sum(t.argument_repairs for t in ctx.output.turns)
        calls = sum(t.tool_calls for t in ctx.output.turns)
        empty = sum(t.empty_searches for t in ctx.output.turns)
        reason = f"{calls} tool calls: {errors} errors, {repairs} argument repairs"
        if empty:
            reason += f"; {empty} voice searches found nothing"
        return passed(errors == 0 and repairs == 0, reason)


@dataclass
class RunCost(Scorer):
    """What the case's runs cost: tokens, dollars, seconds of waiting, model rounds."""

    def evaluate(self, ctx: Context) -> dict[str, float]:
        turns = ctx.output.turns
        return {
            "tokens": float(sum(t.prompt_tokens + t.completion_tokens for t in turns)),
            "cost_usd": round(sum(t.cost_usd for t in turns), 6),
            "latency_s": round(sum(t.latency_s for t in turns), 3),
            "rounds": float(sum(t.rounds for t in turns)),
        }
