"""The scripted models of the web-client tests: what each user message asks for."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from testbed.fake_openai import Turn, call, error_turn


def director(body: dict) -> Turn:
    """The scripted model: what each user message asks for, then a short answer (slow on
    "even", so that a client can drop the stream while the run goes on: 6 s, as node's
    start on a busy host takes seconds of it before a client follows the run)."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        user = next(m for m in reversed(messages) if m["role"] == "user")["content"]
        text = "Music v3 is even more upbeat." if "even" in user else "Done: music v2."
        if "more upbeat" in user and "even" not in user:
            text = "Music v2 is more upbeat, at 120 bpm."
        return Turn(text=text, delay=6.0 if "even" in user else 0.0)
    content = last["content"]
    if content.startswith("Brief"):
        return Turn(tool_calls=(call("create_music_draft", {"prompt": "calm acoustic"}),))
    if "voice 999" in content:
        return Turn(
            tool_calls=(call("create_voice_draft", {"tracks": [{"voiceId": "999", "text": "Hi"}]}),)
        )
    if "even" in content:
        return Turn(
            tool_calls=(call("create_music_draft", {"prompt": "bright synth pop, 128 bpm"}),)
        )
    return Turn(tool_calls=(call("create_music_draft", {"prompt": "upbeat pop, 120 bpm"}),))


def history_director() -> Callable[[dict], Turn]:
    """The model of the history and useChat page chats, by the kind its user message names:
    a reply cut by its provider part-way (after its first text reached the client) and
    asked again, an error, a reply slow enough to be stopped, one that pauses for a few
    seconds part-way, tools, plain text."""
    asked: Counter[str] = Counter()

    def reply(body: dict) -> Turn:
        messages = body["messages"]
        user = next(m for m in reversed(messages) if m["role"] == "user")["content"]
        kind = user.rpartition("\n")[2].partition(":")[0]
        asked[kind] += 1
        if messages[-1]["role"] == "tool":
            return Turn(text="Music v1 is ready.")
        if kind == "tools":
            return Turn(tool_calls=(call("create_music_draft", {"prompt": "warm piano"}),))
        if kind == "reset" and asked[kind] == 1:
            return Turn(
                text="Here is your ad. I kept the rest", pause_after=2, pause=0.6, cut_after=4
            )
        if kind == "fail":
            return error_turn(400, {"error": {"message": "bad request", "type": "invalid"}})
        if kind == "slow":
            return Turn(text="Take one: a long and winding reply", pause_after=2, pause=30.0)
        if kind == "pause":
            return Turn(text="Part one, and after a while part two.", pause_after=2, pause=3.0)
        return Turn(text=f"{kind.capitalize()} answer number {asked[kind]}.")

    return reply
