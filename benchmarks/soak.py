"""Soak: the whole stack under a steady crowd of web clients, then a consistency audit.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.soak [--duration 600] [--clients 20]

Starts, on loopback only: the app under gunicorn (gthread), a Celery worker (thread
pool) on Redis DB 11 (emptied first, refused if it holds keys no benchmark wrote; also
the throttling cache) and the fake OpenAI-compatible provider playing a creative
director, 0.5-2 s per call, with 2% 429 (Retry-After) and 1% 500 replies. Each client
repeats a web user's story until ``--duration`` is up: create an ad, generate, three
chat turns, following every run through its events (``GET
/api/runs/{id}/events?after=&wait=``), activate the newest voice draft, read the
conversation. Prints completed stories, p50/p95 per story and per run, errors by kind
and the RSS of the web and worker processes (growth over 20% is flagged); once the runs
have drained it audits the database: every run ended, every conversation is well formed,
every draft version exists once. Exits 1 when a check fails. Results and the processes'
logs go to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from benchmarks._bench_db import (
    RESULTS,
    ROOT,
    bench_database_url,
    create_database,
    empty_work_queue,
    free_port,
    machine,
    percentile,
    setup_django,
    start,
    web_command,
    write_results,
)
from testbed.fake_openai import TEST_API_KEY, FakeOpenAIServer, Turn, call, error_turn
from testbed.worker import worker_command

DATABASE = "adstudio_bench_soak"
REDIS = os.environ.get("ADSTUDIO_BENCH_SOAK_REDIS_URL", "redis://127.0.0.1:6379/11")
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
SAMPLE_CATALOGUE = ROOT / "voices" / "fixtures" / "sample_catalogue.json"
MEMORY_GROWTH_FLAG = 0.20
INJECTED = {"run failed: rate_limited", "run failed: transient", "no voice draft to activate"}

# Briefs as the web client sends them; languages the sample catalogue has voices for.
BRIEFS = [
    ("Spotify Premium family plan", "Thai families", "TH", "Thai"),
    ("Oat milk for baristas", "coffee lovers in their twenties", "US", "English"),
    ("Weekend train tickets", "students travelling home", "ES", "Spanish"),
    ("Mobile banking app", "small shop owners", "BR", "pt-BR"),
    ("Scooter insurance", "commuters in Ho Chi Minh City", "VN", "Vietnamese"),
]
CHATS = [
    "Make the music more upbeat, around 120 bpm.",
    "Shorten the voice lines and make them warmer.",
    "Add a soft whoosh sound effect at the end.",
]


# --- the provider ------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _calls(message: dict) -> list[tuple[str, dict]]:
    calls = []
    for wire in message.get("tool_calls") or []:
        function = wire.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except ValueError:
            arguments = {}
        calls.append((function.get("name", ""), arguments))
    return calls


def _voices_found(messages: list[dict]) -> list[str]:
    """Voice ids of the latest successful search_voices result in ``messages``."""
    for message in reversed(messages):
        if message.get("role") != "tool":
            continue
        try:
            result = json.loads(_text(message.get("content")))
        except ValueError:
            continue
        if isinstance(result, dict) and result.get("voices"):
            return [str(v["id"]) for v in result["voices"] if "id" in v]
    return []


def _voices_used(messages: list[dict]) -> list[str]:
    """Voice ids of the latest create_voice_draft call in ``messages``."""
    for message in reversed(messages):
        for name, arguments in reversed(_calls(message)):
            if name == "create_voice_draft":
                ids = [t.get("voiceId") for t in arguments.get("tracks", [])]
                return [str(i) for i in ids if i]
    return []


class Director:
    """The creative director the fake provider plays, with a provider's latency and faults.

    A brief gets search_voices, a voice, a music and an sfx draft, then a final answer; a
    follow-up gets one draft of the kind it asks about (a voice search first only when the
    history shows no voice to reuse), then a final answer."""

    def __init__(self, *, seed: int, latency: tuple[float, float], r429: float, r500: float):
        self.rng = random.Random(seed)
        self.latency = latency
        self.r429 = r429
        self.r500 = r500
        self.lock = threading.Lock()
        self.served: Counter[str] = Counter()

    def __call__(self, body: dict) -> Turn:
        with self.lock:
            roll = self.rng.random()
            delay = self.rng.uniform(*self.latency)
        if roll < self.r429:
            reply = error_turn(
                429,
                {
                    "error": {
                        "message": "Rate limit reached for requests per minute.",
                        "type": "requests",
                        "code": "rate_limit_exceeded",
                    }
                },
                headers={"Retry-After": "1"},
            )
            kind = "429"
        elif roll < self.r429 + self.r500:
            reply = error_turn(
                500,
                {"error": {"message": "The server had an error.", "type": "server_error"}},
            )
            kind = "500"
        else:
            reply = self.answer(body)
            kind = "tool_call" if reply.tool_calls else "text"
        with self.lock:
            self.served[kind] += 1
        return replace(reply, delay=delay)

    def answer(self, body: dict) -> Turn:
        if not body.get("tools"):  # a request to summarise older turns
            return Turn(text="Earlier turns: a brief, drafts of each kind, small revisions.")
        messages = body["messages"]
        last_user = max(i for i, m in enumerate(messages) if m.get("role") == "user")
        request = _text(messages[last_user].get("content"))
        after = messages[last_user + 1 :]
        made = [name for m in after if m.get("role") == "assistant" for name, _ in _calls(m)]
        if request.startswith("Brief"):
            language = "en"
            for line in request.splitlines():
                if line.startswith("Language:"):
                    language = line.split(":", 1)[1].strip()
            if "search_voices" not in made:
                return Turn(tool_calls=(call("search_voices", {"language": language, "count": 5}),))
            if "create_voice_draft" not in made:
                ids = _voices_found(after)
                if not ids:
                    return Turn(text="The catalogue has no voice for this language yet.")
                tracks = [
                    {"voiceId": ids[0], "text": "One plan for everyone you love."},
                    {"voiceId": ids[-1], "text": "Try it free today."},
                ]
                return Turn(tool_calls=(call("create_voice_draft", {"tracks": tracks}),))
            if "create_music_draft" not in made:
                music = {"prompt": "warm acoustic pop, 100 bpm, light percussion"}
                return Turn(tool_calls=(call("create_music_draft", music),))
            if "create_sfx_draft" not in made:
                sfx = {"prompts": [{"description": "soft whoosh", "placement": {"type": "start"}}]}
                return Turn(tool_calls=(call("create_sfx_draft", sfx),))
            return Turn(text="Voices v1, music v1 and sound effects v1 are ready to review.")

        lowered = request.lower()
        if "music" in lowered:
            name, arguments = "create_music_draft", {"prompt": "upbeat electro-pop, 120 bpm"}
        elif "effect" in lowered:
            placement = {"type": "end"}
            name, arguments = (
                "create_sfx_draft",
                {"prompts": [{"description": "soft whoosh", "placement": placement}]},
            )
        elif "voice" in lowered:
            ids = _voices_used(messages) or _voices_found(after)
            if not ids:
                if "search_voices" in made:
                    return Turn(text="I found no voice to reuse; tell me which one you prefer.")
                return Turn(tool_calls=(call("search_voices", {"language": "en", "count": 3}),))
            tracks = [{"voiceId": ids[0], "text": "One plan, all of you."}]
            name, arguments = "create_voice_draft", {"tracks": tracks}
        else:
            return Turn(text="Noted.")
        if name in made:
            return Turn(text="The new version is ready as a draft.")
        return Turn(tool_calls=(call(name, arguments),))


class SoakProvider(FakeOpenAIServer):
    """The fake provider counting requests instead of keeping their bodies: a soak sends
    thousands."""

    seen = 0

    def _record(self, body: dict, headers: dict) -> int:
        with self._lock:
            self.seen += 1
            return self.seen  # numbers the tool-call ids: unique for the whole soak


# --- processes ---------------------------------------------------------------------------


def wait_until(ready, what: str, process: subprocess.Popen, log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if process.poll() is not None:
            sys.exit(f"{what} exited early; its log:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
    sys.exit(f"{what} not ready after {timeout} s; its log:\n{log.read_text()[-3000:]}")


def http_ready(url: str) -> bool:
    try:
        httpx.get(url, timeout=10, trust_env=False)
        return True
    except httpx.HTTPError:
        return False


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, 15)
        try:
            process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait(timeout=10)


def _rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def logged_errors(log: Path) -> list[str]:
    """Lines of a process's log that report an error (Django, gunicorn or Celery format)."""
    marks = (" ERROR ", ": ERROR/", "[ERROR]", " CRITICAL ", ": CRITICAL/", "Traceback")
    with log.open(errors="replace") as lines:
        return [
            f"{log.name}: {line.rstrip()[:300]}" for line in lines if any(m in line for m in marks)
        ]


def rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and its children (gunicorn: master + workers)."""
    return sum(_rss_kib(p) for p in [pid, *_children(pid)]) / 1024


class Sampler(threading.Thread):
    """Every few seconds: RSS of web and worker, and this database's open connections."""

    def __init__(self, web: int, worker: int, interval: float = 5.0) -> None:
        super().__init__(daemon=True)
        self.pids = {"web": web, "worker": worker}
        self.interval = interval
        self.samples: list[dict[str, float]] = []
        self.started = time.monotonic()
        self.halt = threading.Event()

    def sample(self) -> dict[str, float]:
        from django.db import connection

        row = {"t": round(time.monotonic() - self.started, 1)}
        row.update({name: round(rss_mib(pid), 1) for name, pid in self.pids.items()})
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            )
            row["db_connections"] = cursor.fetchone()[0]
        self.samples.append(row)
        return row

    def run(self) -> None:
        from django.db import connection

        try:
            while not self.halt.wait(self.interval):
                self.sample()
        finally:
            connection.close()


# --- the clients -------------------------------------------------------------------------


@dataclass
class Tally:
    stories: list[float] = field(default_factory=list)  # seconds per completed story
    runs: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    requests: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: Counter[str] = field(default_factory=Counter)
    samples: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    started: int = 0
    run_statuses: Counter[str] = field(default_factory=Counter)
    activated: list[str] = field(default_factory=list)
    # (seconds since the load started, seconds) of every request but the long polls
    timeline: list[tuple[float, float]] = field(default_factory=list)
    t0: float = field(default_factory=time.monotonic)

    def error(self, kind: str, detail: str = "") -> None:
        self.errors[kind] += 1
        if detail and len(self.samples[kind]) < 3:
            self.samples[kind].append(detail[:600])


class StoryFailed(Exception):
    pass


class Client:
    def __init__(self, http: httpx.AsyncClient, token: str, tally: Tally, args, rng: random.Random):
        self.http = http
        self.headers = {"Authorization": f"Token {token}"}
        self.tally = tally
        self.args = args
        self.rng = rng
        self.errors = 0  # this client's, to tell its clean stories

    def error(self, kind: str, detail: str = "") -> None:
        self.errors += 1
        self.tally.error(kind, detail)

    async def request(
        self, method: str, route: str, path: str, expect: tuple[int, ...], **kwargs
    ) -> httpx.Response:
        """One API call; any other status, or no answer, fails the story."""
        started = time.perf_counter()
        try:
            response = await self.http.request(method, path, headers=self.headers, **kwargs)
        except httpx.HTTPError as exc:
            kind = f"transport {type(exc).__name__} {method} {route}"
            self.error(kind, f"{method} {path}: {exc!r}")
            raise StoryFailed(kind) from None
        if route != "/api/runs/{id}/events":  # long polls wait on purpose
            took = time.perf_counter() - started
            self.tally.requests[f"{method} {route}"].append(took)
            self.tally.timeline.append((time.monotonic() - self.tally.t0, took))
        if response.status_code not in expect:
            kind = f"HTTP {response.status_code} {method} {route}"
            body = kwargs.get("json")
            self.error(kind, f"{method} {path} body={body!r} -> {response.text[:400]}")
            raise StoryFailed(kind)
        return response

    async def follow(self, run_id: str, kind: str, posted_at: float) -> dict:
        """Read the run's events until run.finished, checking they come in order, then
        read the run itself."""
        after = 0
        deadline = time.monotonic() + self.args.run_timeout
        wait = self.args.poll_wait
        finished = False
        # Bounded twice: an empty poll takes at least 0.5 s, and a run writes a few dozen events.
        for _ in range(int(self.args.run_timeout / 0.5) + 100):
            if time.monotonic() > deadline:
                break
            page = (
                await self.request(
                    "GET",
                    "/api/runs/{id}/events",
                    f"/api/runs/{run_id}/events",
                    (200,),
                    params={"after": after, "wait": wait},
                )
            ).json()
            seqs = [e["seq"] for e in page["events"]]
            if seqs != list(range(after + 1, after + 1 + len(seqs))):
                self.error("events out of order or with a gap", f"{run_id}: {seqs}")
            after = page["lastSeq"]
            if any(e["type"] == "run.finished" for e in page["events"]):
                finished = True
                break
            if page["runStatus"] in ("succeeded", "failed", "cancelled") and not seqs:
                self.error("run finished without a run.finished event", run_id)
                finished = True
                break
            if not seqs:
                await asyncio.sleep(0.5)  # the server answered early without events
        if not finished:
            self.error("client gave up waiting for a run", run_id)
            raise StoryFailed("run timeout")
        self.tally.runs[kind].append(time.monotonic() - posted_at)
        run = (await self.request("GET", "/api/runs/{id}", f"/api/runs/{run_id}", (200,))).json()
        self.tally.run_statuses[run["status"]] += 1
        if run["status"] != "succeeded":
            code = (run.get("error") or {}).get("code", "")
            self.error(f"run {run['status']}: {code}", f"{run_id}: {run.get('error')}")
        return run

    async def story(self) -> None:
        client, audience, market, language = self.rng.choice(BRIEFS)
        brief = {
            "clientDescription": client,
            "targetAudience": audience,
            "durationSeconds": self.rng.choice([15, 30, 30, 45]),
            "market": market,
            "language": language,
        }
        ad = (await self.request("POST", "/api/ads/", "/api/ads/", (201,), json=brief)).json()
        ad_id = ad["id"]
        posted = time.monotonic()
        accepted = (
            await self.request(
                "POST", "/api/ai/generate", "/api/ai/generate", (200, 202), json={"adId": ad_id}
            )
        ).json()
        conversation_id = accepted["conversationId"]
        await self.follow(accepted["runId"], "generate", posted)
        for text in CHATS:
            posted = time.monotonic()
            accepted = (
                await self.request(
                    "POST",
                    "/api/ads/{id}/chat",
                    f"/api/ads/{ad_id}/chat",
                    (200, 202),
                    json={"message": text, "conversationId": conversation_id},
                )
            ).json()
            await self.follow(accepted["runId"], "chat", posted)
        drafts = (
            await self.request(
                "GET",
                "/api/ads/{id}/drafts/",
                f"/api/ads/{ad_id}/drafts/",
                (200,),
                params={"kind": "voices"},
            )
        ).json()["results"]
        if drafts:
            newest = drafts[0]
            activated = (
                await self.request(
                    "POST",
                    "/api/drafts/{id}/activate",
                    f"/api/drafts/{newest['id']}/activate",
                    (200,),
                )
            ).json()
            if activated["draft"]["status"] != "active":
                self.error("activation did not make the draft active", str(activated))
            self.tally.activated.append(newest["id"])
        else:
            self.error("no voice draft to activate", ad_id)
        await self.request(
            "GET", "/api/ads/{id}/conversation", f"/api/ads/{ad_id}/conversation", (200,)
        )

    async def loop(self, stop_at: float) -> None:
        for _ in range(int(self.args.duration) + 1):  # a story takes at least a second
            if time.monotonic() >= stop_at:
                return
            self.tally.started += 1
            started = time.monotonic()
            errors_before = self.errors
            try:
                await self.story()
            except StoryFailed:
                await asyncio.sleep(1)  # no hammering a stack that refuses
                continue
            if self.errors == errors_before:
                self.tally.stories.append(time.monotonic() - started)


async def drive(base: str, tokens: list[str], args) -> tuple[Tally, float]:
    tally = Tally()
    limits = httpx.Limits(max_connections=len(tokens) + 4)
    timeout = httpx.Timeout(args.poll_wait + 30, connect=10)
    async with httpx.AsyncClient(
        base_url=base, timeout=timeout, limits=limits, trust_env=False
    ) as http:
        started = tally.t0 = time.monotonic()
        stop_at = started + args.duration
        clients = [
            Client(http, token, tally, args, random.Random(args.seed + n))
            for n, token in enumerate(tokens)
        ]
        await asyncio.gather(*(c.loop(stop_at) for c in clients))
        return tally, time.monotonic() - started


# --- the audit ---------------------------------------------------------------------------


def audit(since: datetime, activated: list[str]) -> dict[str, list[str]]:
    """Problems found in the database, by check (an empty list is a pass)."""
    from conversations.models import Conversation, Message, Run
    from drafts.models import Ad, Draft

    ads = Ad.objects.filter(owner__username__startswith="soak", created_at__gte=since)
    conversations = Conversation.objects.filter(ad__in=ads)
    runs = Run.objects.filter(conversation__in=conversations)
    problems: dict[str, list[str]] = {
        "runs_ended": [],
        "conversations_consistent": [],
        "drafts_unique_and_contiguous": [],
    }
    for run in runs.filter(status__in=["queued", "running"]).only("pk", "status"):
        problems["runs_ended"].append(f"run {run.pk} is still {run.status}")

    runs_by_conversation: dict[Any, list[Run]] = defaultdict(list)
    for run in runs.order_by("created_at", "pk").only("pk", "conversation_id", "started_at"):
        runs_by_conversation[run.conversation_id].append(run)
    rows = (
        Message.objects.filter(conversation__in=conversations)
        .order_by("conversation_id", "seq")
        .values_list("conversation_id", "seq", "role", "tool_calls", "tool_call_id", "run_id")
    )
    by_conversation: dict[Any, list[tuple]] = defaultdict(list)
    for row in rows.iterator(chunk_size=5000):
        by_conversation[row[0]].append(row[1:])
    answered_calls: set[tuple[str, str]] = set()  # (run, draft's tool_call_id) answered
    for conversation_id, messages in by_conversation.items():
        where = f"conversation {conversation_id}"
        bad = problems["conversations_consistent"]
        seqs = [m[0] for m in messages]
        if seqs != list(range(1, len(seqs) + 1)):
            bad.append(f"{where}: seq not contiguous from 1: {seqs[:40]}")
        open_calls: dict[str, int] = {}
        seen_calls: set[str] = set()
        run_order: list[Any] = []
        users_per_run: Counter = Counter()
        for seq, role, tool_calls, tool_call_id, run_id in messages:
            if run_id is not None and (not run_order or run_order[-1] != run_id):
                if run_id in run_order:
                    bad.append(f"{where}: run {run_id}'s messages interleave with another run")
                run_order.append(run_id)
            if role == "user":
                users_per_run[run_id] += 1
            if role in ("user", "assistant") and open_calls:
                bad.append(f"{where}: #{seq} {role} while calls are unanswered: {open_calls}")
                open_calls = {}
            if role == "assistant":
                for wire in tool_calls or []:
                    if wire["id"] in seen_calls:
                        bad.append(f"{where}: #{seq} repeats tool call id {wire['id']}")
                    seen_calls.add(wire["id"])
                    open_calls[wire["id"]] = seq
            elif role == "tool":
                if tool_call_id not in open_calls:
                    bad.append(f"{where}: #{seq} answers no open call ({tool_call_id})")
                else:
                    # A draft names its call as "<assistant message seq>:<call id>".
                    called_at = open_calls.pop(tool_call_id)
                    answered_calls.add((str(run_id), f"{called_at}:{tool_call_id}"[:128]))
        if open_calls:
            bad.append(f"{where}: assistant tool calls without a result: {open_calls}")
        for run in runs_by_conversation.get(conversation_id, []):
            expected = 1 if run.started_at else 0
            if users_per_run[run.pk] != expected:
                bad.append(
                    f"{where}: run {run.pk} has {users_per_run[run.pk]} user messages, "
                    f"expected {expected}"
                )
        started = [r.pk for r in runs_by_conversation.get(conversation_id, []) if r.started_at]
        if run_order != started[: len(run_order)] or len(run_order) != len(started):
            bad.append(f"{where}: runs answered out of submission order")

    versions: dict[tuple, list[int]] = defaultdict(list)
    drafts = Draft.objects.filter(ad__in=ads).values_list(
        "ad_id", "kind", "version", "run_id", "tool_call_id", "status", "id"
    )
    written_by_call: Counter = Counter()
    actives: Counter = Counter()
    status_of: dict[str, str] = {}
    for ad_id, kind, version, run_id, tool_call_id, status, draft_id in drafts.iterator():
        versions[(ad_id, kind)].append(version)
        status_of[str(draft_id)] = status
        if status == "active":
            actives[(ad_id, kind)] += 1
        if run_id is not None:
            written_by_call[(str(run_id), tool_call_id)] += 1
            if (str(run_id), tool_call_id) not in answered_calls:
                problems["drafts_unique_and_contiguous"].append(
                    f"draft {kind} v{version} of ad {ad_id}: no tool result for its call "
                    f"{tool_call_id}"
                )
    bad = problems["drafts_unique_and_contiguous"]
    for (ad_id, kind), numbers in versions.items():
        if sorted(numbers) != list(range(1, len(numbers) + 1)):
            bad.append(f"ad {ad_id} {kind}: versions {sorted(numbers)}")
    for key, count in written_by_call.items():
        if count > 1:
            bad.append(f"tool call {key} wrote {count} drafts")
    for key, count in actives.items():
        if count > 1:
            bad.append(f"ad {key[0]} {key[1]}: {count} active versions")
    for draft_id in activated:
        if status_of.get(draft_id) not in ("active", "archived"):
            bad.append(f"activated draft {draft_id} is {status_of.get(draft_id)}")
    return problems


# --- main --------------------------------------------------------------------------------


def figures(values: list[float]) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.5), 4),
        "p95": round(percentile(values, 0.95), 4),
        "max": round(max(values), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=600, help="seconds of load")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument(
        "--web-threads",
        type=int,
        default=24,
        help="per web worker; a client waiting on events holds one (and a DB connection)",
    )
    parser.add_argument("--worker-concurrency", type=int, default=None, help="default: clients")
    parser.add_argument(
        "--latency", type=float, nargs=2, default=(0.5, 2.0), metavar=("MIN", "MAX")
    )
    parser.add_argument("--rate-429", type=float, default=0.02)
    parser.add_argument("--rate-500", type=float, default=0.01)
    parser.add_argument("--poll-wait", type=float, default=10, help="events long-poll seconds")
    parser.add_argument("--run-timeout", type=float, default=180, help="a client's patience")
    parser.add_argument("--drain-timeout", type=float, default=180)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    args.seed = args.seed if args.seed is not None else random.randrange(1_000_000)
    concurrency = args.worker_concurrency or args.clients

    url = bench_database_url(DATABASE)
    if urlsplit(url).hostname not in LOOPBACK:
        sys.exit(
            f"The soak runs on loopback only; DATABASE_URL points at {urlsplit(url).hostname}."
        )
    create_database(url)
    setup_django(url)
    logging.getLogger().setLevel(logging.WARNING)

    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from accounts.services import token_create
    from voices.models import Voice

    if not Voice.objects.filter(approved=True, active=True).exists():
        call_command(
            "import_voices", str(SAMPLE_CATALOGUE), "--provider", "sample", "--approve", verbosity=0
        )
    tokens = []
    for n in range(args.clients):
        user, _ = User.objects.get_or_create(username=f"soak{n}")
        tokens.append(token_create(user=user)[1])
    empty_work_queue(REDIS)

    director = Director(
        seed=args.seed, latency=tuple(args.latency), r429=args.rate_429, r500=args.rate_500
    )
    provider = SoakProvider(host="127.0.0.1").start()
    provider.responder = director
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": url,
        "CELERY_BROKER_URL": REDIS,
        "CACHE_URL": REDIS,
        "ADSTUDIO_RUN_RATE": "1000000/minute",
        "OPENAI_API_KEY": TEST_API_KEY,
        "OPENAI_BASE_URL": provider.base_url,
        "ADSTUDIO_OPENAI_MODEL": "gpt-4.1-mini",
        "ADSTUDIO_PROVIDER_ROUTES": "default=openai",
        "ADSTUDIO_PROVIDER_FALLBACKS": "",
        "LOG_LEVEL": "WARNING",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    for key in ("DASHSCOPE_API_KEY", "MOONSHOT_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(key, None)  # only the fake provider answers
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    logs = RESULTS / f"soak-{stamp}-logs"
    logs.mkdir(parents=True, exist_ok=True)
    web = start(
        web_command(
            port,
            workers=args.web_workers,
            threads=args.web_threads,
            extra=("--timeout", str(int(args.poll_wait) + 60)),
        ),
        {**env, "ADSTUDIO_DB_POOL_MAX_SIZE": str(args.web_threads)},
        logs / "web.log",
    )
    worker = start(
        worker_command(
            concurrency=concurrency,
            loglevel="INFO",
            extra=("-n", f"soak{os.getpid()}@%h", "--without-gossip", "--without-mingle"),
        ),
        {**env, "ADSTUDIO_DB_POOL_MAX_SIZE": str(min(concurrency, 20) + 2)},
        logs / "worker.log",
    )
    since = timezone.now()
    checks: dict[str, list[str]] = {}
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: http_ready(f"{base}/api/schema/"), "gunicorn", web, logs / "web.log", 60)
        wait_until(
            lambda: " ready." in (logs / "worker.log").read_text(),
            "celery worker",
            worker,
            logs / "worker.log",
            60,
        )
        sampler = Sampler(web.pid, worker.pid)
        cold = sampler.sample()
        sampler.start()
        print(
            f"soak: {args.clients} clients x {args.duration:.0f} s, seed {args.seed}, "
            f"worker threads {concurrency}, logs {logs}"
        )
        tally, elapsed = asyncio.run(drive(base, tokens, args))
        load_stopped = time.monotonic()

        from conversations.models import Run

        unfinished = Run.objects.filter(
            conversation__ad__owner__username__startswith="soak",
            created_at__gte=since,
            status__in=["queued", "running"],
        )
        deadline = time.monotonic() + args.drain_timeout
        while unfinished.exists() and time.monotonic() < deadline:
            time.sleep(0.5)
        drained_s = time.monotonic() - load_stopped
        sampler.halt.set()
        sampler.join(timeout=30)
        end = sampler.sample()
        checks = audit(since, tally.activated)
    finally:
        stop(web)
        stop(worker)
        provider.stop()
        connection.close()

    # The first samples include each process's warm-up (imports, pools, first requests):
    # growth is measured from the sample a fifth of the way in (at most a minute).
    warm_at = min(60.0, args.duration / 5)
    warm = next((s for s in sampler.samples if s["t"] >= warm_at), cold)
    memory = {}
    for name in ("web", "worker"):
        growth = (end[name] - warm[name]) / warm[name] if warm[name] else 0.0
        memory[name] = {
            "cold_mib": cold[name],
            "warm_mib": warm[name],
            "warm_at_s": warm["t"],
            "end_mib": end[name],
            "growth": round(growth, 3),
            "flagged": growth > MEMORY_GROWTH_FLAG,
        }
    checks["logs_without_errors"] = logged_errors(logs / "web.log") + logged_errors(
        logs / "worker.log"
    )
    protocol = provider.verify()
    checks["provider_saw_valid_requests"] = protocol
    # Runs failed by the injected faults (three in a row) are the provider's doing, and an
    # ad whose generation failed has no voice draft; any other error is the stack's.
    unexpected = [
        f"{count} x {kind}" for kind, count in tally.errors.items() if kind not in INJECTED
    ]
    checks["no_unexpected_errors"] = unexpected
    completed = len(tally.stories)
    minutes: dict[int, list[float]] = defaultdict(list)
    for at, took in tally.timeline:
        minutes[int(at // 60)].append(took)
    by_minute = {minute: figures(values) for minute, values in sorted(minutes.items())}
    summary = {
        "clients": args.clients,
        "duration_s": args.duration,
        "elapsed_s": round(elapsed, 1),
        "drained_after_s": round(drained_s, 1),
        "seed": args.seed,
        "stories": {"started": tally.started, "completed": completed, **figures(tally.stories)},
        "runs": {kind: figures(values) for kind, values in tally.runs.items()},
        "run_statuses": dict(tally.run_statuses),
        "requests_s": {name: figures(values) for name, values in sorted(tally.requests.items())},
        "requests_s_by_minute": by_minute,
        "errors": dict(tally.errors),
        "error_samples": dict(tally.samples),
        "provider": {"calls": provider.seen, "served": dict(director.served)},
        "memory": memory,
        "samples": sampler.samples,
        "checks": {name: problems[:50] for name, problems in checks.items()},
        "logs": str(logs),
        "machine": machine(),
    }
    stories = summary["stories"]
    print(
        f"  stories: {completed} completed of {tally.started} started"
        + (
            f"; per story p50 {stories['p50']:.1f} s, p95 {stories['p95']:.1f} s"
            if completed
            else ""
        )
    )
    for kind, values in summary["runs"].items():
        if values["n"]:
            print(
                f"  {kind} run (post -> run.finished): n {values['n']}, "
                f"p50 {values['p50']:.1f} s, p95 {values['p95']:.1f} s"
            )
    print(
        f"  runs by status: {dict(tally.run_statuses)}; provider calls {provider.seen} "
        f"({dict(director.served)})"
    )
    for name, values in summary["requests_s"].items():
        print(
            f"  {name:<32} n {values['n']:>5}  p50 {values['p50'] * 1000:7.1f} ms  "
            f"p95 {values['p95'] * 1000:7.1f} ms"
        )
    print(
        "  requests (all but long polls) p50/p95 ms by minute: "
        + ", ".join(
            f"{m}: {f['p50'] * 1000:.0f}/{f['p95'] * 1000:.0f}" for m, f in by_minute.items()
        )
    )
    print(f"  errors: {dict(tally.errors) or 'none'}")
    for kind, samples in tally.samples.items():
        for sample in samples:
            print(f"    {kind}: {sample}")
    for name, figure in memory.items():
        flag = "  FLAG: grew more than 20%" if figure["flagged"] else ""
        print(
            f"  RSS {name}: cold {figure['cold_mib']:.0f} MiB, at {figure['warm_at_s']:.0f} s "
            f"{figure['warm_mib']:.0f} MiB, end {figure['end_mib']:.0f} MiB "
            f"({figure['growth']:+.1%}){flag}"
        )
    peak = max((s["db_connections"] for s in sampler.samples), default=0)
    print(f"  runs drained {drained_s:.1f} s after the load stopped; peak DB connections {peak}")
    failed = False
    for name, problems in checks.items():
        status = "ok" if not problems else f"FAILED ({len(problems)})"
        failed = failed or bool(problems)
        print(f"  check {name}: {status}")
        for problem in problems[:10]:
            print(f"    {problem}")
    print(f"results: {write_results('soak', summary)}")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
