"""Stop: how soon a cancel ends a run whose model is streaming its reply.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.cancel [--cancels 50] [--seed 1]

A Celery worker, as README starts one (heartbeats every 10 s, the default), runs one run
at a time against a local OpenAI-compatible server of this script's that streams a reply
a word every 50 ms for 20 s. At a random point of each reply (0.1-3 s after the request
reached the server) the script cancels the run as the API does (``run_cancel``) and
measures, on one clock, the time until the server sees its connection closed by the
worker, and until the run is ``cancelled`` in the database. Prints p50/p95/max of both
over ``--cancels`` runs; results also go to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import select
import socket
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from benchmarks._bench_db import (
    DEFAULT_DATABASE,
    bench_django,
    empty_work_queue,
    machine,
    percentile,
    source_revision,
    start,
    write_results,
)

BROKER = os.environ.get("ADSTUDIO_BENCH_BROKER_URL", "redis://127.0.0.1:6379/14")
WORD_EVERY_S = 0.05
REPLY_S = 20.0
API_KEY = "sk-bench-cancel-0123456789"


class SlowReply(BaseHTTPRequestHandler):
    """A chat completion streamed a word at a time; notes when the client hangs up."""

    protocol_version = "HTTP/1.1"
    started = threading.Event()  # a request is being answered
    closed: list[float] = []  # when each request's client hung up (monotonic)

    def log_message(self, *args) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        SlowReply.started.set()
        sock = self.connection
        ends = time.monotonic() + REPLY_S
        next_word = 0.0
        while time.monotonic() < ends:
            if _hung_up(sock):
                SlowReply.closed.append(time.monotonic())
                return
            if time.monotonic() >= next_word:
                try:
                    self._send(_chunk({"content": "word "}))
                except OSError:
                    SlowReply.closed.append(time.monotonic())
                    return
                next_word = time.monotonic() + WORD_EVERY_S
            time.sleep(0.002)
        self._send(_chunk({}, finish_reason="stop") + b"data: [DONE]\n\n")
        self._send(b"")

    def _send(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _chunk(delta: dict, finish_reason: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    chunk = {
        "id": "bench",
        "object": "chat.completion.chunk",
        "model": "bench",
        "choices": [choice],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


def _hung_up(sock: socket.socket) -> bool:
    readable, _, _ = select.select([sock], [], [], 0)
    if not readable:
        return False
    try:
        return sock.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cancels", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--broker-url", default=BROKER)
    parser.add_argument("--database", default=DEFAULT_DATABASE)
    args = parser.parse_args()
    url = bench_django(args.database, broker_url=args.broker_url)
    logging.getLogger().setLevel(logging.WARNING)

    from django.contrib.auth.models import User

    from conversations.models import Run, RunStatus
    from conversations.run_request import RunRequest
    from conversations.services import brief_send, run_cancel
    from drafts.services import ad_create
    from testbed.worker import worker_command

    empty_work_queue(args.broker_url)
    server = ThreadingHTTPServer(("127.0.0.1", 0), SlowReply)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": args.broker_url,
        "OPENAI_API_KEY": API_KEY,
        "OPENAI_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}/v1",
        "ADSTUDIO_OPENAI_MODEL": "bench",
        "ADSTUDIO_PROVIDER_ROUTES": "default=openai",
        "ADSTUDIO_PROVIDER_FALLBACKS": "",
        "LOG_LEVEL": "WARNING",
    }
    rng = random.Random(args.seed)
    user = User.objects.create(username=f"cancel-{time.time_ns()}")
    closed_ms: list[float] = []
    cancelled_ms: list[float] = []
    statuses: list[str] = []
    with tempfile.TemporaryDirectory() as logs:
        worker = start(worker_command(concurrency=4, loglevel="WARNING"), env, Path(logs) / "w.log")
        try:
            for _ in range(args.cancels):
                SlowReply.started.clear()
                ad = ad_create(owner=user, title="cancel", client="Spotify", language="en")
                run = brief_send(request=RunRequest(ad=ad))
                if not SlowReply.started.wait(timeout=60):
                    raise SystemExit(f"no model request came; see {logs}/w.log")
                time.sleep(rng.uniform(0.1, 3.0))  # somewhere in the reply
                hung_up = len(SlowReply.closed)
                cancelled_at = time.monotonic()
                run_cancel(run=run)
                status = None
                while time.monotonic() - cancelled_at < 30:
                    status = Run.objects.filter(pk=run.pk).values_list("status", flat=True)[0]
                    if status in RunStatus.finished():
                        break
                    time.sleep(0.005)
                cancelled_ms.append((time.monotonic() - cancelled_at) * 1000)
                statuses.append(status)
                while len(SlowReply.closed) == hung_up and time.monotonic() - cancelled_at < 30:
                    time.sleep(0.005)
                if len(SlowReply.closed) > hung_up:
                    closed_ms.append((SlowReply.closed[hung_up] - cancelled_at) * 1000)
        finally:
            os.killpg(worker.pid, 15)
            worker.wait(timeout=30)
            server.shutdown()

    def figures(values: list[float]) -> dict:
        if not values:  # the worker never hung up: each reply was read to its end
            return {"n": 0}
        return {
            "n": len(values),
            "p50_ms": round(percentile(values, 0.5), 1),
            "p95_ms": round(percentile(values, 0.95), 1),
            "max_ms": round(max(values), 1),
        }

    summary = {
        "cancels": args.cancels,
        "statuses": {s: statuses.count(s) for s in set(statuses)},
        "cancel_to_connection_closed": figures(closed_ms),
        "cancel_to_run_cancelled": figures(cancelled_ms),
        "median_cancelled_ms": round(statistics.median(cancelled_ms), 1),
        "revision": source_revision(),
        "machine": machine(),
    }
    print(json.dumps({k: v for k, v in summary.items() if k not in ("machine",)}, indent=1))
    print(f"results: {write_results('cancel', summary)}")


if __name__ == "__main__":
    main()
