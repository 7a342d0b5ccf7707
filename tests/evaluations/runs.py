"""Evaluation runs made directly (no loop): two runs of one set where one case regresses."""

from __future__ import annotations

from evaluations.models import EvaluationRun
from evaluations.services import evaluation_run_finish, result_record


def ok(reason: str = "fine") -> dict:
    return {"value": True, "reason": reason}


def failed(reason: str) -> dict:
    return {"value": False, "reason": reason}


def kept_run(
    model: str, cases: dict[str, dict], conversations: dict | None = None
) -> EvaluationRun:
    run = EvaluationRun.objects.create(
        dataset_name="golden",
        dataset_path="evals/dev.yaml",
        dataset_hash="a" * 64,
        provider="openai",
        model=model,
        prompt_version="creative_director_v2",
        git_commit="0123456789abcdef0123456789abcdef01234567",
    )
    for name, scores in cases.items():
        conversation = (conversations or {}).get(name)
        result_record(
            run,
            case_name=name,
            inputs={"brief": {"language": "th"}},
            scores=scores,
            conversation_id=str(conversation.pk) if conversation else "",
            ad_id=str(conversation.ad_id) if conversation else "",
        )
    evaluation_run_finish(run, thresholds={})
    return run


def before_and_after(conversations: dict | None = None) -> tuple[EvaluationRun, EvaluationRun]:
    """gpt-a: both cases pass. gpt-b: th-30 regresses on its script's language."""
    before = kept_run(
        "gpt-a",
        {
            "th-30": {
                "ScriptInLanguage": ok("written in th"),
                "tokens": {"value": 5000.0, "reason": ""},
            },
            "de-15": {
                "ScriptInLanguage": ok("written in de"),
                "tokens": {"value": 3000.0, "reason": ""},
            },
        },
        conversations,
    )
    after = kept_run(
        "gpt-b",
        {
            "th-30": {
                "ScriptInLanguage": failed("written in en (p=0.97), the ad is th"),
                "tokens": {"value": 4200.0, "reason": ""},
            },
            "de-15": {
                "ScriptInLanguage": ok("written in de"),
                "tokens": {"value": 3000.0, "reason": ""},
            },
        },
        conversations,
    )
    return before, after
