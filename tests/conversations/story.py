"""The standard first turn of an ad, as a provider's scripted replies: the story the loop
tests tell on every wire format (``turn`` for OpenAI-style servers, ``claude_turn`` for
the Messages API)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from conversations.models import Run
from testbed.fake_openai import call


def first_turn(voices: Sequence[Any], make_turn: Callable[..., Any], language: str = "en"):
    """search_voices; voice, music and sfx drafts in one reply; a final answer."""
    one, two = (str(v.pk) for v in voices[:2])
    return [
        make_turn(tool_calls=[call("search_voices", {"language": language, "count": 5})]),
        make_turn(
            "Writing the drafts.",
            tool_calls=[
                call(
                    "create_voice_draft",
                    {
                        "tracks": [
                            {"voiceId": one, "text": "One plan for the whole family."},
                            {"voiceId": two, "text": "Spotify Premium Family."},
                        ]
                    },
                ),
                call("create_music_draft", {"prompt": "warm acoustic pop, 95 bpm"}),
                call("create_sfx_draft", {"prompts": [{"description": "soft whoosh"}]}),
            ],
        ),
        make_turn("Created voices v1, music v1 and sfx v1. Review and activate."),
    ]


def run_of(run: Run) -> Run:
    run.refresh_from_db()
    return run
