"""The peer benchmark runs the same session as our loop, and the instruction counts read
callgrind's listing as callgrind means it."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from benchmarks.agent_loop import parse_annotate

LISTING = """\
--------------------------------------------------------------------------------
Ir                  file:function
--------------------------------------------------------------------------------
900 (100.0%)  PROGRAM TOTALS
1,500 (50.00%)  /src/Python/generated_cases.c.h:_PyEval_EvalFrameDefault [/lib/libpython3.13.so]
1,200 (40.00%)  /src/Python/generated_cases.c.h:_PyEval_EvalFrameDefault'2
  300 (10.00%)  ???:memcpy [/lib/libc.so.6]
"""


def test_recursion_levels_and_unnamed_libraries_are_read_as_callgrind_lists_them():
    counts = parse_annotate(LISTING)

    assert counts == {
        "_PyEval_EvalFrameDefault [libpython3.13.so]": 1500,
        "_PyEval_EvalFrameDefault [?]": 1200,
        "memcpy [libc.so.6]": 300,
    }


def test_the_peer_runs_the_standard_session_and_stores_it_in_sqlite(tmp_path):
    pytest.importorskip("agents", reason="pip install -e '.[bench]'")
    from benchmarks.peers.openai_agents import OpenAIAgentsPeer

    peer = OpenAIAgentsPeer(storage="sqlite", directory=tmp_path)
    milliseconds = asyncio.run(peer.session_ms())

    assert milliseconds > 0
    assert peer.model.calls == 5
    with sqlite3.connect(peer.database) as database:
        rows = [
            json.loads(r) for (r,) in database.execute("SELECT message_data FROM agent_messages")
        ]
    assert [row.get("name") for row in rows if row.get("type") == "function_call"] == [
        "search_voices",
        "create_voice_draft",
        "create_music_draft",
        "create_sfx_draft",
    ]
    assert rows[-1]["content"][0]["text"].startswith("Voices, music and sound effects")


def test_only_pairs_whose_commits_agree_within_2x_give_ratios():
    from benchmarks.peers.__main__ import mean_per_round, per_round, steady_pairs

    # the median pair commits in 0.4 ms; 0.9 ms (over 2x) and 0.15 ms (under half) go
    assert steady_pairs([0.3, 0.4, 0.9, 0.5, 0.15]) == [0, 1, 3]
    assert steady_pairs([2.5, 2.6, 4.9]) == [0, 1, 2]  # a loaded disk the whole time
    sessions = [10.0, 10.0, 40.0]  # one slow commit's session
    assert per_round(sessions) < mean_per_round(sessions)
