"""The system prompt, kept in a versioned file with no per-request data in it, so it is a
stable, cacheable prefix of every request; and the brief as the first user message."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from drafts.models import Ad

PROMPT_VERSION = "creative_director_v2"
_PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"

FINAL_ANSWER_NUDGE = (
    "You have used all tool rounds for this turn. Do not call tools now: reply to me with "
    "your final message, naming the drafts you created and anything left to do."
)


@cache
def system_prompt(version: str = PROMPT_VERSION) -> str:
    return (_PROMPTS_DIR / f"{version}.md").read_text(encoding="utf-8").strip()


def brief_message(ad: Ad, request_text: str = "") -> str:
    """The brief as the first user message; the demo director parses this layout."""
    lines = ["Brief", f"Client: {ad.client}"]
    if ad.audience:
        lines.append(f"Audience: {ad.audience}")
    lines.append(f"Language: {ad.language}")
    if ad.market:
        lines.append(f"Market: {ad.market}")
    lines.append(f"Duration: {ad.duration_s} s")
    if ad.context:
        lines.append(f"Context: {ad.context}")
    if request_text:
        lines += ["", request_text]
    return "\n".join(lines)
