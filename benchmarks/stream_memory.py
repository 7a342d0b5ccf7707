"""The Python memory one open event stream holds in a web process.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.stream_memory [--streams 300]

Serves ``--streams`` event streams of a queued run from the production ASGI application
(``adstudio.asgi``) in this process, without a server: each request is called as uvicorn
calls it, and left open once its first chunk is out. The heap grown meanwhile, traced by
``tracemalloc`` after a warm-up of 50 streams, is divided by the streams and printed with
the lines that allocated most of it. The server's own per-connection state (uvicorn's
protocol, the socket's buffers) is not in it; ``benchmarks/streams.py`` reports the
resident memory of real servers, which moves with what the allocator kept from before.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import time
import tracemalloc

from benchmarks._bench_db import (
    DEFAULT_DATABASE,
    bench_django,
    machine,
    source_revision,
    write_results,
)


class Streams:
    """Event-stream requests to an ASGI application, held open until ``close``."""

    def __init__(self, application, path: str, token: str) -> None:
        self.application = application
        self.path = path
        self.token = token
        self.started = 0
        self.leave = asyncio.Event()

    def scope(self) -> dict:
        return {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": self.path,
            "raw_path": self.path.encode(),
            "root_path": "",
            "query_string": b"wait=60",
            "headers": [
                (b"host", b"127.0.0.1"),
                (b"authorization", f"Token {self.token}".encode()),
                (b"accept", b"text/event-stream"),
            ],
            "server": ("127.0.0.1", 8000),
            "client": ("127.0.0.1", 50000),
        }

    async def one(self) -> None:
        incoming = [{"type": "http.request", "body": b""}]
        first = True

        async def receive() -> dict:
            if incoming:
                return incoming.pop()
            await self.leave.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            nonlocal first
            if message["type"] == "http.response.body" and message.get("body") and first:
                first = False
                self.started += 1

        await self.application(self.scope(), receive, send)

    async def open(self, n: int) -> list[asyncio.Task]:
        target = self.started + n
        tasks = [asyncio.create_task(self.one()) for _ in range(n)]
        while self.started < target:
            if any(task.done() for task in tasks):  # refused or failed
                raise SystemExit("a stream ended before its first chunk (see the log)")
            await asyncio.sleep(0.05)
        return tasks

    async def close(self, tasks: list[asyncio.Task]) -> None:
        self.leave.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.leave = asyncio.Event()


async def measure(application, path: str, token: str, n: int) -> dict:
    streams = Streams(application, path, token)
    await streams.close(await streams.open(50))  # the first requests' imports and caches
    gc.collect()
    tracemalloc.start(8)
    before = tracemalloc.take_snapshot()
    tasks = await streams.open(n)
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    await streams.close(tasks)
    grown = after.compare_to(before, "traceback")
    top = sorted(grown, key=lambda stat: -stat.size_diff)[:10]
    return {
        "streams": n,
        "heap_kib_per_stream": round(sum(stat.size_diff for stat in grown) / n / 1024, 1),
        "largest": [
            {
                "bytes_per_stream": round(stat.size_diff / n),
                "where": [
                    f"{frame.filename.split('site-packages/')[-1]}:{frame.lineno}"
                    for frame in list(stat.traceback)[-3:]
                ],
            }
            for stat in top
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--database", default=DEFAULT_DATABASE)
    args = parser.parse_args()
    os.environ.setdefault("ALLOWED_HOSTS", "127.0.0.1")
    os.environ["ADSTUDIO_MAX_STREAMS_PER_USER"] = str(args.streams + 100)
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "0"
    bench_django(args.database)

    from django.contrib.auth.models import User
    from django.db import connections

    from accounts.services import token_create
    from adstudio.asgi import application
    from conversations.models import Conversation, Run
    from drafts.services import ad_create

    user = User.objects.create(username=f"stream-memory-{time.time_ns()}")
    token = token_create(user=user)[1]
    ad = ad_create(owner=user, title="memory", client="Spotify", language="th")
    run = Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="x")
    connections.close_all()
    path = f"/api/runs/{run.pk}/events/stream"
    result = asyncio.run(measure(application, path, token, args.streams))
    print(f"{result['heap_kib_per_stream']} KiB of Python heap per open stream")
    for entry in result["largest"]:
        print(f"  {entry['bytes_per_stream']:6d} B  {' <- '.join(reversed(entry['where']))}")
    summary = {**result, "revision": source_revision(), "machine": machine()}
    print(f"results: {write_results('stream_memory', summary)}")


if __name__ == "__main__":
    main()
