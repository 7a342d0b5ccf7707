"""An optional LLM judge of creative brief-fit (``manage.py evaluate --judge PROVIDER``):
the deterministic scorers say whether the ad is right; a judge reads it against the brief
with a rubric and says how well it fits, 1 to 5, with a reason. Off unless asked for, as
it costs a model call per case and its answer varies."""

from __future__ import annotations

import json
from dataclasses import dataclass

import json_repair
from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

import providers
from adstudio import observability
from evaluations.cases import AdOutcome, CaseInput, CaseMetadata
from providers import GenerateOptions, GenerateRequest, ProviderError, UserMessage

RUBRIC = """You judge radio ads made by a creative director for a brief.
Score how well the ad fits the brief, from 1 to 5:
5 - it speaks to the audience in their language and the brief's tone, names the client,
    says what is offered, ends with a clear call to action, and its music and sound
    effects suit the tone;
4 - all of that with one weakness;
3 - usable, with several weaknesses;
2 - off-brief in tone, audience or offer;
1 - unusable: wrong language, wrong client, or no message.
Answer with JSON only: {"score": <1-5>, "reason": "<one sentence>"}."""


def _ad_text(inputs: CaseInput, outcome: AdOutcome) -> str:
    drafts = outcome.drafts
    lines = [t["text"] for t in drafts.get("voices", {}).get("voiceTracks", [])]
    effects = [fx["description"] for fx in drafts.get("sfx", {}).get("soundFxPrompts", [])]
    return json.dumps(
        {
            "brief": inputs.brief.model_dump(),
            "refinement": inputs.refinement.message if inputs.refinement else None,
            "script": lines,
            "music": drafts.get("music", {}).get("musicPrompt"),
            "soundEffects": effects,
        },
        ensure_ascii=False,
        indent=1,
    )


@dataclass
class BriefFitJudge(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """``brief_fit``: the judge's score scaled to 0..1 (5 -> 1.0), with its reason."""

    provider: str

    def evaluate(
        self, ctx: EvaluatorContext[CaseInput, AdOutcome, CaseMetadata]
    ) -> dict[str, EvaluationReason]:
        request = GenerateRequest(
            model="",
            system=RUBRIC,
            messages=(UserMessage(text=_ad_text(ctx.inputs, ctx.output)),),
            options=GenerateOptions(max_tokens=200, temperature=0.0),
        )
        try:
            route = providers.route(language="en", requested=self.provider)
            response = providers.generate(request, route=route, watch=observability.model_call)
        except (ProviderError, providers.ProviderUnavailable) as exc:
            return _no_verdict(f"the judge failed: {exc}")
        answer = json_repair.loads(response.message.text or "")
        score = answer.get("score") if isinstance(answer, dict) else None
        if not isinstance(score, int | float) or isinstance(score, bool) or not 1 <= score <= 5:
            return _no_verdict(f"the answer was not a score: {response.message.text[:200]!r}")
        reason = str(answer.get("reason", ""))[:500]
        return {"brief_fit": EvaluationReason(value=round(score / 5, 2), reason=reason)}


def _no_verdict(reason: str) -> dict[str, EvaluationReason]:
    """No score (a made-up one would move the mean): a label saying why."""
    return {"brief_fit_missing": EvaluationReason(value="no verdict", reason=reason)}
