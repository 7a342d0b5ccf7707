"""An evaluation run kept: started with what it runs against, one result per case as
pydantic-evals scored it, finished with a summary and its thresholds' verdict."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from evaluations.models import EvaluationResult, EvaluationRun, EvaluationStatus

ALL = "all"  # a threshold on every pass/fail result of every case


def git_commit() -> str:
    """The checkout's commit, read from ``.git`` (no process started); "" where there is
    none (an installed package, an archive)."""
    git = Path(settings.BASE_DIR) / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:40]
        ref = head.removeprefix("ref: ")
        if (git / ref).is_file():
            return (git / ref).read_text().strip()[:40]
        for line in (git / "packed-refs").read_text().splitlines():
            commit, _, name = line.partition(" ")
            if name == ref:
                return commit[:40]
    except OSError:
        return ""
    return ""


def result_record(
    run: EvaluationRun,
    *,
    case_name: str,
    inputs: dict,
    scores: dict[str, dict[str, Any]],
    ad_id: str = "",
    conversation_id: str = "",
    error: str = "",
    duration_s: float = 0.0,
) -> EvaluationResult:
    """One case's result. It passed when it ran and every pass/fail score is a pass."""
    verdicts = [s["value"] for s in scores.values() if isinstance(s["value"], bool)]
    return EvaluationResult.objects.create(
        run=run,
        case_name=case_name,
        inputs=inputs,
        ad_id=ad_id or None,
        conversation_id=conversation_id or None,
        scores=scores,
        passed=not error and all(verdicts),
        error=error,
        duration_s=duration_s,
    )


def summary_of(results: list[EvaluationResult]) -> dict[str, dict[str, float]]:
    """Per score name: the share of passes (pass/fail scores) or the mean (numbers), over
    the cases it was given for; and the share of cases that passed whole."""
    verdicts: dict[str, list[bool]] = {}
    numbers: dict[str, list[float]] = {}
    for result in results:
        for name, score in result.scores.items():
            value = score["value"]
            if isinstance(value, bool):
                verdicts.setdefault(name, []).append(value)
            elif isinstance(value, int | float):
                numbers.setdefault(name, []).append(float(value))
            # a label (text) has no rate or mean
    summary: dict[str, dict[str, float]] = {
        name: {"passRate": round(sum(v) / len(v), 4), "cases": len(v)}
        for name, v in sorted(verdicts.items())
    }
    summary.update(
        {
            name: {"mean": round(sum(v) / len(v), 6), "cases": len(v)}
            for name, v in sorted(numbers.items())
        }
    )
    if results:
        summary["cases passed"] = {
            "passRate": round(sum(r.passed for r in results) / len(results), 4),
            "cases": len(results),
        }
    return summary


def thresholds_missed(results: list[EvaluationResult], thresholds: dict[str, float]) -> list[str]:
    """What falls short of ``thresholds`` (score name, or ``all``, -> least pass rate)."""
    summary = summary_of(results)
    every = [s["value"] for r in results for s in r.scores.values() if isinstance(s["value"], bool)]
    every += [False for r in results if r.error]
    missed = []
    for name, least in thresholds.items():
        if name == ALL:
            rate = sum(every) / len(every) if every else 0.0
        elif "passRate" in summary.get(name, {}):
            rate = summary[name]["passRate"]
        else:
            missed.append(f"{name}: no pass/fail result of that name")
            continue
        if rate < least:
            missed.append(f"{name}: {rate:.0%} passed, {least:.0%} required")
    return missed


def evaluation_run_finish(
    run: EvaluationRun, *, status: str = EvaluationStatus.FINISHED, thresholds: dict[str, float]
) -> list[str]:
    """Close the evaluation run: its summary, cost and thresholds' verdict. Returns what
    was missed."""
    results = list(run.results.all())
    missed = thresholds_missed(results, thresholds) if thresholds else []
    run.summary = summary_of(results)
    run.cost_usd = sum(
        (Decimal(str(r.scores.get("cost_usd", {}).get("value", 0))) for r in results), Decimal(0)
    )
    run.thresholds = thresholds
    run.thresholds_met = (not missed) if thresholds else None
    run.status = status
    run.finished_at = timezone.now()
    run.save()
    return missed


def case_deltas(run: EvaluationRun, baseline: EvaluationRun) -> list[dict[str, Any]]:
    """Per case of ``run`` also in ``baseline``: the scores that changed, regressions
    (a pass that is now a fail) first."""
    before = {r.case_name: r for r in baseline.results.all()}
    rows = []
    for result in run.results.all():
        old = before.get(result.case_name)
        if old is None:
            continue
        changes = {}
        for name in sorted(set(result.scores) | set(old.scores)):
            new_value = result.scores.get(name, {}).get("value")
            old_value = old.scores.get(name, {}).get("value")
            if new_value != old_value:
                changes[name] = {"before": old_value, "after": new_value}
        regressions = [n for n, c in changes.items() if c["before"] is True and c["after"] is False]
        if changes or old.passed != result.passed:
            rows.append(
                {
                    "case": result.case_name,
                    "passedBefore": old.passed,
                    "passedAfter": result.passed,
                    "regressions": regressions,
                    "changes": changes,
                }
            )
    rows.sort(key=lambda row: (not row["regressions"], row["case"]))
    return rows
