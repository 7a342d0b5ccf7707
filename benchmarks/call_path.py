"""The walk of one chat message from its POST to the draft row, and of that draft's event out
to a Server-Sent Events client: the project's functions on the call stack when the draft's
INSERT is sent (or when the ``draft.created`` event is written to the stream), one line each.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.call_path [--path rest|ui|sse] [--quiet]

The embedded set-up (no broker: the run's task executes in the process that enqueues it;
no provider key: the offline demo director) makes the web half and the worker half one
stack: the view, the chat-send service, the enqueue, the task, the loop, the tool, the
write. The sample catalogue is imported when the database has no Thai voice; a new ad is
created through the API, then one chat message is posted to it
(``rest``: ``POST /api/ads/{id}/chat``; ``ui``: ``POST /api/ads/{id}/ui-chat``; ``sse``: the
REST chat, then ``GET /api/runs/{id}/events/stream`` until its draft event). Prints
the frames (file, line, function) from the outermost project frame in, then three counts:
hops (project frames on the stack), files (distinct modules among them) and round trips
(times the walk comes back to a module it had left).
"""

from __future__ import annotations

import argparse
import itertools
import os
import traceback
import uuid
from pathlib import Path

from benchmarks._bench_db import ROOT, bench_django
from benchmarks.agent_loop import import_sample_catalogue_if_empty

DATABASE = "adstudio_bench_call_path"
PRODUCT = ("adstudio", "conversations", "drafts", "providers", "voices", "workspaces")


def product_frames(stack: traceback.StackSummary) -> list[traceback.FrameSummary]:
    frames = []
    for frame in stack:
        path = Path(frame.filename).resolve()
        if path.is_relative_to(ROOT) and path.relative_to(ROOT).parts[0] in PRODUCT:
            frames.append(frame)
    return frames


def counts(frames: list[traceback.FrameSummary]) -> dict[str, int]:
    modules = [Path(f.filename).resolve().relative_to(ROOT).as_posix() for f in frames]
    round_trips = 0
    left: set[str] = set()
    for before, after in itertools.pairwise(modules):
        if after != before:
            left.add(before)
            if after in left:
                round_trips += 1
    return {"hops": len(frames), "files": len(set(modules)), "round_trips": round_trips}


def walk(path: str) -> list[traceback.FrameSummary]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from rest_framework.test import APIClient

    from accounts.services import token_create

    user = get_user_model().objects.create_user(f"call-path-{uuid.uuid4().hex[:8]}")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
    brief = {
        "clientDescription": "Spotify Premium family plan",
        "targetAudience": "Thai families",
        "durationSeconds": 30,
        "market": "TH",
        "language": "Thai",
    }
    created = client.post("/api/ads/", brief, format="json")
    assert created.status_code == 201, created.content
    ad_id = created.json()["id"]

    seen: list[traceback.StackSummary] = []

    def capture(execute, sql, params, many, context):
        if not seen and 'INSERT INTO "drafts_draft"' in sql:
            seen.append(traceback.extract_stack())
        return execute(sql, params, many, context)

    if path == "sse":
        return _event_out(client, ad_id)
    with connection.execute_wrapper(capture):
        if path == "rest":
            response = client.post(
                f"/api/ads/{ad_id}/chat", {"message": "Make the ad."}, format="json"
            )
        else:
            message = {
                "id": f"msg-{uuid.uuid4().hex[:8]}",
                "role": "user",
                "parts": [{"type": "text", "text": "Make the ad."}],
            }
            body = {"id": ad_id, "messages": [message], "trigger": "submit-message"}
            response = client.post(f"/api/ads/{ad_id}/ui-chat", body, format="json")
            b"".join(response.streaming_content)
    assert response.status_code in (200, 202), response.content
    if not seen:
        raise SystemExit("no draft was written: the demo director answered without a tool")
    return product_frames(seen[0])


def _event_out(client, ad_id: str) -> list[traceback.FrameSummary]:
    """The stack that writes the run's first ``draft.created`` event to its SSE stream."""
    from conversations.web import events_api

    posted = client.post(f"/api/ads/{ad_id}/chat", {"message": "Make the ad."}, format="json")
    assert posted.status_code == 202, posted.content
    seen: list[traceback.StackSummary] = []
    said = events_api.server_sent

    def server_sent(event):
        if not seen and event.type == "draft.created":
            seen.append(traceback.extract_stack())
        return said(event)

    events_api.server_sent = server_sent
    try:
        stream = client.get(
            f"/api/runs/{posted.json()['runId']}/events/stream", HTTP_ACCEPT="text/event-stream"
        )
        b"".join(stream.streaming_content)
    finally:
        events_api.server_sent = said
    if not seen:
        raise SystemExit("the stream sent no draft event")
    return product_frames(seen[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", choices=["rest", "ui", "sse"], default="rest")
    parser.add_argument("--quiet", action="store_true", help="print the counts only")
    args = parser.parse_args()
    keys = ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "MOONSHOT_API_KEY", "ANTHROPIC_API_KEY")
    for name in ("CELERY_BROKER_URL", *keys):
        os.environ.pop(name, None)
    bench_django(DATABASE)
    from django.test.utils import setup_test_environment

    setup_test_environment()  # the test client's host allowed, as in the suite
    import_sample_catalogue_if_empty()
    frames = walk(args.path)
    if not args.quiet:
        for frame in frames:
            where = Path(frame.filename).resolve().relative_to(ROOT).as_posix()
            print(f"{where}:{frame.lineno} {frame.name}")
    print(" ".join(f"{name}={value}" for name, value in counts(frames).items()))


if __name__ == "__main__":
    main()
