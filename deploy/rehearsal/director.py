"""The rehearsal's model provider (none is reachable here): an OpenAI-compatible server on
the database host's address that answers as a creative director does, a music draft and
then a final answer, each turn. A brief or message holding ``[slow N]`` has each reply take
N seconds, for the faults that need a run in the middle of a model call; ``[slow N once ID]``
only the turn's first, and only the first time it is asked for ``ID`` (a worker that took
the run over is answered at once): a fault that needs one long call, not a long run.

    python deploy/rehearsal/director.py --host 10.77.0.10   # prints its base URL
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from testbed.fake_openai import FakeOpenAIServer, Turn, call, turn

_SLOW = re.compile(r"\[slow (\d+(?:\.\d+)?)(?: once (\w+))?\]")


_asked: set[str] = set()  # the requests answered slowly once
_asked_lock = threading.Lock()


def _first_time(key: str) -> bool:
    with _asked_lock:
        first = key not in _asked
        _asked.add(key)
    return first


def direct(body: dict) -> Turn:
    messages = body.get("messages", [])
    said = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
    slow = _SLOW.search(said)
    once = bool(slow and slow.group(2))
    delay = float(slow.group(1)) if slow else 0.2
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=0)
    if not any(m.get("role") == "tool" for m in messages[last_user:]):  # this turn's first
        if once and not _first_time(slow.group(2)):
            delay = 0.2
        return turn(
            tool_calls=[call("create_music_draft", {"prompt": "warm acoustic pop"})], delay=delay
        )
    return turn("Music v1 is ready: warm acoustic pop.", delay=0.2 if once else delay)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", required=True)
    server = FakeOpenAIServer(host=parser.parse_args().host)
    server.responder = direct
    server.check_protocol = False  # a rehearsal, not a test of the wire
    server.start()
    print(server.base_url, flush=True)
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    stopped.wait()
    server.stop()


if __name__ == "__main__":
    main()
