"""What the model is told: the system prompt, kept in a versioned file with no
per-request data in it, so it is a stable, cacheable prefix of every request; the brief
as the first user message; and the prompts of the history summary."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from drafts.models import Ad

PROMPT_VERSION = "creative_director_v2"
_PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"

SUMMARY_SYSTEM_PROMPT = (
    "You summarise the earlier part of a conversation between a user and an audio-ad "
    "creative director. Keep every fact that later turns may need: the brief, the voices "
    "chosen (names and ids), each draft version created and what it contained, and the "
    "user's requests and preferences. Plain prose, at most 250 words."
)

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


def summary_request_text(previous_summary: str, transcript: str) -> str:
    """The summary call's message: the summary so far, if any, and the turns to add."""
    previous = f"Summary so far:\n{previous_summary}\n\n" if previous_summary else ""
    return f"{previous}Conversation to add:\n{transcript}"


def summary_block(summary: str) -> str:
    """The conversation's summary as the first message of a request, before the turns it
    does not repeat."""
    return f"Summary of the earlier conversation (older turns are not repeated here):\n{summary}"
