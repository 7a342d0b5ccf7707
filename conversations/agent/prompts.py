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


def brief_fields(ad: Ad) -> dict[str, object]:
    """The ad's brief as the model is given it (``Run.brief``), by the names the web
    client's version shapes use."""
    fields: dict[str, object] = {"client": ad.client}
    if ad.audience:
        fields["audience"] = ad.audience
    fields["language"] = ad.language
    if ad.market:
        fields["market"] = ad.market
    fields["durationSeconds"] = ad.duration_s
    if ad.context:
        fields["context"] = ad.context
    return fields


_BRIEF_LINES = {
    "client": "Client: {}",
    "audience": "Audience: {}",
    "language": "Language: {}",
    "market": "Market: {}",
    "durationSeconds": "Duration: {} s",
    "context": "Context: {}",
}


def brief_message(brief: dict[str, object], request_text: str = "") -> str:
    """The brief (``brief_fields``) as the first user message, with what the person wrote
    after it; the demo director parses this layout."""
    lines = ["Brief"] + [line.format(brief[k]) for k, line in _BRIEF_LINES.items() if k in brief]
    if request_text:
        lines += ["", request_text]
    return "\n".join(lines)


def request_text_of(input_text: str, brief: dict[str, object]) -> str:
    """What the person wrote in a brief run's message (``brief_message``'s
    ``request_text``)."""
    return input_text.removeprefix(brief_message(brief)).removeprefix("\n\n")


def summary_request_text(previous_summary: str, transcript: str) -> str:
    """The summary call's message: the summary so far, if any, and the turns to add."""
    previous = f"Summary so far:\n{previous_summary}\n\n" if previous_summary else ""
    return f"{previous}Conversation to add:\n{transcript}"


def summary_block(summary: str) -> str:
    """The conversation's summary as the first message of a request, before the turns it
    does not repeat."""
    return f"Summary of the earlier conversation (older turns are not repeated here):\n{summary}"
