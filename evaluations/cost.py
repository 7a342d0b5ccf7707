"""What an evaluation will cost before it starts: its turns times the tokens of a typical
turn, at the price of the model each case is routed to (``ADSTUDIO_MODEL_PRICES``)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import providers
from adstudio.languages import normalise_language
from evaluations.datasets import GoldenSet
from providers.pricing import usage_cost

# A turn of the standard session (docs/benchmarks/HISTORY.md, "Prompt tokens": 8,771 prompt
# tokens over five calls, two turns): four model calls, the history growing with each.
PROMPT_TOKENS_PER_TURN = 9_000
COMPLETION_TOKENS_PER_TURN = 1_200
# A judge's call per case (evaluations.judge): the rubric, the brief and the ad.
JUDGE_PROMPT_TOKENS, JUDGE_COMPLETION_TOKENS = 1_500, 100


@dataclass(frozen=True)
class CostEstimate:
    turns: int
    usd: Decimal
    models: tuple[str, ...]

    @property
    def model(self) -> str:
        return self.models[0] if len(self.models) == 1 else ""

    def describe(self) -> str:
        return ", ".join(self.models) or "no model"


def estimated_cost(
    dataset: GoldenSet, *, provider: str | None, judge: str | None = None
) -> CostEstimate:
    turns, usd, models = 0, Decimal(0), []
    usage = providers.Usage(
        prompt_tokens=PROMPT_TOKENS_PER_TURN, completion_tokens=COMPLETION_TOKENS_PER_TURN
    )
    for case in dataset.cases:
        brief = case.inputs.brief
        binding = providers.route(
            language=normalise_language(brief.language).code,
            market=brief.market,
            requested=provider,
        )[0]
        case_turns = 1 + (case.inputs.refinement is not None)
        turns += case_turns
        usd += case_turns * usage_cost(model=binding.model, usage=usage)
        if binding.model not in models:
            models.append(binding.model)
    if judge:
        judging = providers.Usage(
            prompt_tokens=JUDGE_PROMPT_TOKENS, completion_tokens=JUDGE_COMPLETION_TOKENS
        )
        model = providers.route(language="en", requested=judge)[0].model
        usd += len(dataset.cases) * usage_cost(model=model, usage=judging)
    return CostEstimate(turns=turns, usd=usd, models=tuple(models))
