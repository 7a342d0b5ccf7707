"""A real conversation as a golden case: its brief, and its second turn as a refinement,
in the set's YAML for a person to review, complete and add to ``evals/``. What must
change is read from the drafts the second turn wrote; how (the direction) only a person
can say, so it is left for them: a set with it unfilled does not load."""

from __future__ import annotations

import re
import typing

import yaml

from conversations.models import Conversation
from drafts.models import Draft
from evaluations.cases import Direction

DIRECTION_TO_FILL = "FILL IN: " + " | ".join(typing.get_args(Direction))


def case_from_conversation(conversation: Conversation) -> dict:
    ad = conversation.ad
    runs = list(conversation.runs.filter(replaced_by__isnull=True).order_by("created_at")[:2])
    brief = (runs[0].brief if runs and runs[0].brief else None) or {}
    inputs: dict = {
        "brief": {
            "clientDescription": brief.get("client", ad.client),
            "targetAudience": brief.get("audience", ad.audience),
            "durationSeconds": brief.get("durationSeconds", ad.duration_s),
            "market": brief.get("market", ad.market),
            "language": brief.get("language", ad.language),
            "additionalContext": brief.get("context", ad.context),
        }
    }
    if len(runs) > 1:
        kinds = Draft.objects.filter(run_id=runs[1].pk).values_list("kind", flat=True)
        inputs["refinement"] = {
            "message": runs[1].input_text,
            "changes": sorted(set(kinds)) or ["FILL IN: voices | music | sfx"],
            "direction": DIRECTION_TO_FILL,
        }
    slug = re.sub(r"[^a-z0-9]+", "-", f"{ad.language}-{ad.title}".lower()).strip("-")
    return {
        "name": f"{slug[:60]}-{str(conversation.pk)[:8]}",
        "inputs": inputs,
        "metadata": {"source": f"conversation {conversation.pk}"},
    }


def cases_yaml(cases: list[dict]) -> str:
    """The cases as items of a set's ``cases:`` list."""
    return yaml.safe_dump(cases, sort_keys=False, allow_unicode=True, width=100)
