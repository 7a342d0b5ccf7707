"""An evaluation run as people read it: a table of cases by score (failures first), two
runs side by side with what regressed, and the same as CSV or JSON for a spreadsheet or
a script."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

from evaluations.models import EvaluationResult, EvaluationRun

# The scorers' results in the order a reader wants them: does it run, is it whole, is it
# right, then what it cost.
SCORE_ORDER = (
    "RunsSucceeded",
    "AllKindsDrafted",
    "CleanToolCalls",
    "VoicesInLanguage",
    "VoiceAttributes",
    "ScriptInLanguage",
    "ScriptFitsSlot",
    "Mentions",
    "music_instrumental",
    "music_length",
    "SfxInsideAd",
    "SfxUnderSpeech",
    "RefinementScope",
    "RefinementDirection",
    "VoicesKept",
    "SlotChanged",
    "tokens",
    "cost_usd",
    "latency_s",
    "rounds",
)


def score_names(*runs_results: list[EvaluationResult]) -> list[str]:
    found = {name for results in runs_results for r in results for name in r.scores}
    known = [name for name in SCORE_ORDER if name in found]
    return known + sorted(found - set(known))


@dataclass
class Cell:
    value: Any = None  # True/False, a number, a label, or None: not scored for this case
    reason: str = ""

    @property
    def kind(self) -> str:
        if isinstance(self.value, bool):
            return "pass" if self.value else "fail"
        if isinstance(self.value, str):
            return "label"
        return "none" if self.value is None else "number"


@dataclass
class Row:
    result: EvaluationResult
    cells: list[Cell] = field(default_factory=list)


def _cell(result: EvaluationResult | None, name: str) -> Cell:
    score = (result.scores if result else {}).get(name)
    return Cell(score["value"], score.get("reason", "")) if score else Cell()


def run_table(run: EvaluationRun) -> tuple[list[str], list[Row]]:
    """The run's cases by score, the failed cases first."""
    results = list(run.results.select_related("conversation"))
    names = score_names(results)
    results.sort(key=lambda r: (r.passed, r.case_name))
    return names, [Row(r, [_cell(r, name) for name in names]) for r in results]


@dataclass
class Change:
    before: Cell
    after: Cell

    @property
    def mark(self) -> str:
        """regressed (a pass now a fail), improved, changed, same, or only on one side."""
        old, new = self.before.value, self.after.value
        if old is None or new is None:
            return "same" if old is new else "one-side"
        if old is True and new is False:
            return "regressed"
        if old is False and new is True:
            return "improved"
        return "same" if old == new else "changed"

    @property
    def delta(self) -> float | None:
        old, new = self.before.value, self.after.value
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (old, new))
        return round(new - old, 6) if numbers else None


@dataclass
class ComparedCase:
    case_name: str
    before: EvaluationResult | None
    after: EvaluationResult | None
    changes: list[Change]

    @property
    def regressed(self) -> bool:
        return any(change.mark == "regressed" for change in self.changes)


@dataclass
class ComparedScore:
    name: str
    before: str
    after: str
    regressed: bool


def comparison(
    run: EvaluationRun, baseline: EvaluationRun
) -> tuple[list[str], list[ComparedScore], list[ComparedCase]]:
    """``run`` against ``baseline``, case by case (by name): regressions first, then the
    cases that changed, then the rest; and each score's pass rate or mean in both."""
    after = {r.case_name: r for r in run.results.select_related("conversation")}
    before = {r.case_name: r for r in baseline.results.select_related("conversation")}
    names = score_names(list(after.values()), list(before.values()))
    cases = [
        ComparedCase(
            name,
            before.get(name),
            after.get(name),
            [Change(_cell(before.get(name), n), _cell(after.get(name), n)) for n in names],
        )
        for name in sorted(set(after) | set(before))
    ]
    cases.sort(
        key=lambda c: (not c.regressed, all(x.mark == "same" for x in c.changes), c.case_name)
    )
    scores = []
    for name in names:
        old, new = baseline.summary.get(name, {}), run.summary.get(name, {})
        scores.append(
            ComparedScore(
                name,
                _figure(old),
                _figure(new),
                regressed="passRate" in old
                and "passRate" in new
                and new["passRate"] < old["passRate"],
            )
        )
    return names, scores, cases


def _figure(summary: dict) -> str:
    if "passRate" in summary:
        return f"{summary['passRate']:.0%}"
    if "mean" in summary:
        return f"{summary['mean']:g}"
    return "-"


def export_rows(run: EvaluationRun) -> list[dict[str, Any]]:
    """One flat row per case: its name, verdict, links, and each score with its reason."""
    results = list(run.results.all())
    names = score_names(results)
    rows = []
    for result in sorted(results, key=lambda r: r.case_name):
        row: dict[str, Any] = {
            "case": result.case_name,
            "passed": result.passed,
            "error": result.error,
            "ad": str(result.ad_id or ""),
            "conversation": str(result.conversation_id or ""),
            "duration_s": result.duration_s,
        }
        for name in names:
            cell = _cell(result, name)
            row[name] = cell.value
            row[f"{name} reason"] = cell.reason
        rows.append(row)
    return rows


def as_csv(run: EvaluationRun) -> str:
    rows = export_rows(run)
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return out.getvalue()


def as_json(run: EvaluationRun) -> dict[str, Any]:
    return {
        "id": str(run.pk),
        "dataset": {"name": run.dataset_name, "path": run.dataset_path, "hash": run.dataset_hash},
        "provider": run.provider,
        "model": run.model,
        "promptVersion": run.prompt_version,
        "gitCommit": run.git_commit,
        "status": run.status,
        "startedAt": run.started_at.isoformat(),
        "finishedAt": run.finished_at.isoformat() if run.finished_at else None,
        "summary": run.summary,
        "thresholds": run.thresholds,
        "thresholdsMet": run.thresholds_met,
        "comparedWith": str(run.compared_with_id) if run.compared_with_id else None,
        "cases": [
            {
                "case": r.case_name,
                "passed": r.passed,
                "error": r.error,
                "ad": str(r.ad_id or ""),
                "conversation": str(r.conversation_id or ""),
                "durationS": r.duration_s,
                "inputs": r.inputs,
                "scores": r.scores,
            }
            for r in run.results.order_by("case_name")
        ],
    }
