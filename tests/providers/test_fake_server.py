"""The fake OpenAI-compatible server itself: protocol checks, bookkeeping, concurrency."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest

from testbed.fake_openai import FakeOpenAIServer, call, protocol_problems, turn


def assistant_calling(*ids: str) -> dict:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids
        ],
    }


def tool(call_id: str) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "content": "{}"}


SYSTEM = {"role": "system", "content": "s"}
USER = {"role": "user", "content": "hi"}

PROTOCOL = [
    ("valid", [SYSTEM, USER, assistant_calling("a", "b"), tool("a"), tool("b"), USER], None),
    ("tool answers no open call", [USER, tool("x")], "answers no open call"),
    (
        "tool answers twice",
        [USER, assistant_calling("a"), tool("a"), tool("a")],
        "answers no open call",
    ),
    (
        "unanswered call before user",
        [USER, assistant_calling("a", "b"), tool("a"), USER],
        "unanswered",
    ),
    ("system not first", [USER, SYSTEM], "system message at position 1"),
    ("ends with open calls", [USER, assistant_calling("a")], "ends with unanswered calls"),
    (
        "replayed arguments not JSON",
        [
            USER,
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{'a': 1,}"},
                    }
                ],
            },
            tool("a"),
        ],
        "not JSON",
    ),
]


@pytest.mark.parametrize(("label", "messages", "problem"), PROTOCOL, ids=[p[0] for p in PROTOCOL])
def test_protocol_problems(label, messages, problem):
    problems = protocol_problems(messages)

    if problem is None:
        assert problems == []
    else:
        assert any(problem in p for p in problems), problems


def post(server: FakeOpenAIServer, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_protocol_break_is_answered_400_and_reported():
    with FakeOpenAIServer() as server:
        server.script(turn("never served"))
        status, body = post(server, {"model": "m", "messages": [USER, SYSTEM]})

        problems = server.verify()

    assert status == 400 and "protocol violation" in body["error"]["message"]
    assert any("system message at position 1" in p for p in problems)
    assert any("never requested" in p for p in problems)


def test_an_unscripted_request_is_reported():
    with FakeOpenAIServer() as server:
        status, _ = post(server, {"model": "m", "messages": [USER]})
        problems = server.verify()

    assert status == 400
    assert problems == ["request 1 was not scripted"]


def test_requests_are_recorded_and_turns_served_in_order(fake_openai):
    fake_openai.script(turn("one"), turn(tool_calls=[call("f", {"a": 1}, id="c1")]))

    _, first = post(fake_openai, {"model": "m", "messages": [USER]})
    _, second = post(fake_openai, {"model": "m", "messages": [USER]})

    assert first["choices"][0]["message"]["content"] == "one"
    assert second["choices"][0]["message"]["tool_calls"][0]["id"] == "c1"
    assert second["choices"][0]["finish_reason"] == "tool_calls"
    assert [r["messages"] for r in fake_openai.requests] == [[USER], [USER]]
    assert fake_openai.remaining == 0


def test_responder_serves_concurrent_requests_with_latency():
    """All 20 requests are in the responder at once (a barrier only they can pass), and
    each reply still waits out the latency: proven by counting, not by a wall-clock bound
    a loaded machine can miss."""
    clients = 20
    together = threading.Barrier(clients, timeout=4)  # below the client timeout

    def responder(body):
        together.wait()  # breaks (and the reply fails) if requests are served one by one
        return turn(f"echo {body['messages'][-1]['content']}")

    with FakeOpenAIServer() as server:
        server.responder = responder
        server.latency = 0.3
        results: dict[int, str] = {}
        took: dict[int, float] = {}

        def worker(n: int) -> None:
            started = time.monotonic()
            _, body = post(
                server, {"model": "m", "messages": [{"role": "user", "content": str(n)}]}
            )
            took[n] = time.monotonic() - started
            results[n] = body["choices"][0]["message"]["content"]

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        problems = server.verify()

    assert results == {n: f"echo {n}" for n in range(clients)}
    assert not together.broken
    assert min(took.values()) >= 0.3  # the latency is added to every reply
    assert problems == []
