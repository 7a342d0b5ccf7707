"""Test doubles shared by the suite and the benchmarks: the local OpenAI-compatible server.

Script a whole agent conversation readably::

    fake.script(
        turn(tool_calls=[call("search_voices", {"language": "th"})]),
        turn(tool_calls=[call("create_voice_draft", {...}), call("create_music_draft", {...})]),
        turn("Done: voices v1 and music v1 are ready."),
    )
"""

from __future__ import annotations

from tests.fakes.server import (
    TEST_API_KEY,
    FakeCall,
    FakeOpenAIServer,
    Turn,
    call,
    error_turn,
    protocol_problems,
    raw_turn,
    turn,
)

__all__ = [
    "TEST_API_KEY",
    "FakeCall",
    "FakeOpenAIServer",
    "Turn",
    "call",
    "error_turn",
    "protocol_problems",
    "raw_turn",
    "turn",
]
