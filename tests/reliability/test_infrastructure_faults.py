"""Infrastructure faults under a real Celery worker: the worker killed with SIGKILL at
exact points of a run, the broker restarted with runs queued and running, and every
database connection dropped mid-run. After each, every run ended exactly once and no
message, draft or tool result was lost, duplicated or left half written.

The worker is stopped at an exact write without any hook in product code: this test's
own Postgres connection holds the lock that write needs, the test sees the worker wait
on it in ``pg_stat_activity``, and kills it there.

A Postgres restart is simulated with ``pg_terminate_backend`` on every connection of the
worker: that is what a client sees of a restart (its connections dropped), without
restarting the server that other databases on this machine share.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection
from rest_framework.test import APIClient

from accounts.services import token_create
from conversations.models import Conversation, Message, ModelCall, Run, RunEvent
from conversations.run_request import RunRequest
from conversations.runs.enqueue import ENQUEUE_FAILED
from conversations.runs.recover import runs_recover
from conversations.services import brief_send, conversation_of, send_message
from conversations.tasks import recover_runs
from drafts.models import Draft
from testbed.fake_openai import Turn, call, turn
from tests.support.fixtures import STALE_AFTER, WORKER_APP
from tests.support.worker import database_url, heartbeat_stale, wait_for, wait_until_finished

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


# --- helpers -----------------------------------------------------------------------------


@contextmanager
def lock_holder() -> Iterator[psycopg.Connection]:
    """A Postgres connection of the test's own, outside Django; whatever it locks is held
    until ``rollback()`` (or the end of the block)."""
    holder = psycopg.connect(database_url(), application_name="adstudio-test-lock-holder")
    try:
        yield holder
    finally:
        holder.rollback()
        holder.close()


def backends_waiting_on_lock(fragment: str) -> list[int]:
    """Backends of the test database blocked on a lock in a statement containing
    ``fragment`` (a step's writes are one statement: the fragment may be in a CTE)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND wait_event_type = 'Lock' AND application_name = %s AND query LIKE %s",
            [WORKER_APP, f"%{fragment}%"],
        )
        return [pid for (pid,) in cursor.fetchall()]


def backends_alive(pids: Iterable[int]) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [list(pids)])
        return cursor.fetchone()[0] > 0


def holds_lock(pid: int, table: str, mode: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE pid = %s AND relation = %s::regclass "
            "AND mode = %s AND granted",
            [pid, table, mode],
        )
        return cursor.fetchone()[0] > 0


def kill_blocked_worker(worker, holder: psycopg.Connection, pids: list[int]) -> None:
    """SIGKILL the worker while its connections wait on ``holder``'s lock, then release the
    lock; their orphaned backends finish their statement, find their client gone and end."""
    worker.kill()
    holder.rollback()
    wait_for(lambda: not backends_alive(pids), what="the killed worker's backends to end")


def unfinished(run: Run) -> bool:
    return Run.objects.filter(pk=run.pk, status__in=("queued", "running")).exists()


def restart_and_recover(worker, run: Run) -> None:
    """A new worker comes up at once (as in a deploy); once the dead worker's heartbeat is
    stale, the periodic sweep (what beat sends) hands its run to the new worker, unless
    the new worker's own sweep at start-up already did."""
    worker.start()
    wait_for(
        lambda: heartbeat_stale(run, STALE_AFTER) or not unfinished(run),
        timeout=STALE_AFTER + 10,
        what="the run's heartbeat to go stale",
    )
    recover_runs.delay()


def stored(conversations: Iterable[Conversation]) -> set[tuple]:
    """Every message and draft of the conversations (and their ads) as it is now."""
    conversation_ids = [c.pk for c in conversations]
    messages = Message.objects.filter(conversation_id__in=conversation_ids).values_list(
        "pk", "conversation_id", "seq", "role", "text", "tool_call_id", "run_id"
    )
    drafts = Draft.objects.filter(ad__conversations__in=conversation_ids).values_list(
        "pk", "ad_id", "kind", "version", "payload", "run_id", "tool_call_id"
    )
    return {("message", *m) for m in messages} | {
        ("draft", *d[:4], repr(d[4]), *d[5:]) for d in drafts
    }


def assert_invariants(runs: list[Run], *, survivors: set[tuple] = frozenset()) -> None:
    """Every run ended exactly once, cleanly; its user message and everything stored
    before the fault survive; draft versions have no gap or duplicate; every tool call
    of an assistant message has exactly one result."""
    for run in runs:
        run.refresh_from_db()
        assert run.status in ("succeeded", "failed"), f"run {run.pk} ended {run.status}"
        if run.status == "failed":
            assert run.error_code and run.error_message, f"run {run.pk} failed silently"
        assert run.finished_at is not None
        finishes = RunEvent.objects.filter(run=run, type="run.finished").count()
        assert finishes == 1, f"run {run.pk} finished {finishes} times"
        users = Message.objects.filter(run=run, role="user", text=run.input_text).count()
        assert users == 1, f"run {run.pk} has {users} user messages"

    conversations = list(Conversation.objects.filter(runs__in=runs).distinct())
    now = stored(conversations)
    assert survivors <= now, f"lost after the fault: {sorted(map(str, survivors - now))}"

    versions: dict[tuple, list[int]] = defaultdict(list)
    for ad_id, kind, version in Draft.objects.filter(
        ad__conversations__in=conversations
    ).values_list("ad_id", "kind", "version"):
        versions[ad_id, kind].append(version)
    for key, numbers in versions.items():
        assert sorted(numbers) == list(range(1, len(numbers) + 1)), (key, numbers)

    for conversation in conversations:
        rows = list(Message.objects.filter(conversation=conversation).order_by("seq"))
        assert [r.seq for r in rows] == list(range(1, len(rows) + 1))
        open_calls: Counter = Counter()
        for row in rows:
            if row.role == "tool":
                assert open_calls[row.tool_call_id] == 1, (
                    f"tool message #{row.seq} answers no open call {row.tool_call_id!r}"
                )
                open_calls[row.tool_call_id] -= 1
                continue
            assert not +open_calls, f"#{row.seq} {row.role} follows unanswered {open_calls}"
            open_calls = Counter(c["id"] for c in row.tool_calls)
        assert not +open_calls, f"conversation ends with unanswered calls {open_calls}"


# --- 1. the worker killed at exact points of a run -----------------------------------------
# (Killed while waiting on the model: tests/conversations/test_worker.py.)


def test_killed_while_writing_the_draft_and_its_tool_message(worker, fake_openai, make_ad):
    """The model's reply, the draft and its tool message are one statement, committed on
    its own (no transaction around it): the worker is killed while that statement waits,
    PostgreSQL completes it whole once it can, and the resumed run goes on from the stored
    result,
    neither executing the call again nor asking the model again. (The same statement
    aborted instead: ``test_a_connection_lost_in_the_middle_of_a_step_resumes_the_run``.)"""
    ad = make_ad(language="en")
    fake_openai.script(
        turn(tool_calls=[call("create_music_draft", {"prompt": "warm acoustic pop"})], delay=1.0),
        turn("Music v1 is ready."),
    )
    conversation = conversation_of(ad=ad)
    run = brief_send(request=RunRequest(ad=ad, conversation=conversation))
    fake_openai.wait_for_requests(1)  # the first model request

    with lock_holder() as holder:
        # Messages so far: the user's (#1); the model's reply is #2, its tool result #3.
        # An uncommitted #3 of our own makes the worker's write of #2 and #3 (with the
        # draft, in one statement) wait for us.
        holder.execute(
            "INSERT INTO conversations_message (conversation_id, seq, role, text, tool_calls, "
            "tool_call_id, name, is_error, provider_data, tokens, created_at) "
            "VALUES (%s, 3, 'user', 'lock', '[]', '', '', false, '{}', 0, now())",
            [conversation.pk],
        )
        pids = wait_for(
            lambda: backends_waiting_on_lock('INSERT INTO "conversations_message"'),
            what="the worker to wait on the tool message insert",
        )
        assert len(pids) == 1
        # The same statement inserts the draft (uncommitted, so invisible here).
        assert holds_lock(pids[0], "drafts_draft", "RowExclusiveLock")
        assert not Draft.objects.filter(ad=ad).exists()
        survivors = stored([conversation])
        roles = Message.objects.filter(conversation=conversation).values_list("seq", "role")
        assert list(roles) == [(1, "user")]
        kill_blocked_worker(worker, holder, pids)

    # The orphaned statement was completed whole: the reply, the draft, its tool message.
    assert list(Draft.objects.filter(ad=ad).values_list("kind", "version")) == [("music", 1)]
    tools = Message.objects.filter(conversation=conversation, role="tool")
    assert [(m.seq, m.name) for m in tools] == [(3, "create_music_draft")]
    run.refresh_from_db()
    assert run.status == "running"

    restart_and_recover(worker, run)
    wait_until_finished(run)  # resumed

    assert run.status == "succeeded", run.error_message
    assert run.final_message == "Music v1 is ready."
    assert list(Draft.objects.filter(ad=ad).values_list("kind", "version")) == [("music", 1)]
    tools = Message.objects.filter(conversation=conversation, role="tool")
    assert [(m.seq, m.name, m.is_error) for m in tools] == [(3, "create_music_draft", False)]
    assert len(fake_openai.requests) == 2  # the call was not executed or asked again
    # Round 2's model_call.started was written with the result, before its request could
    # be sent: the resumed run records that request as interrupted, an estimate on the
    # safe side of what may have been paid for.
    calls = ModelCall.objects.filter(run=run).order_by("created_at")
    assert [(c.round, c.error_code) for c in calls] == [(1, ""), (2, "interrupted"), (2, "")]
    started = RunEvent.objects.filter(run=run, type="run.started").order_by("seq")
    assert [e.data["resumed"] for e in started] == [False, True]
    assert RunEvent.objects.filter(run=run, type="draft.created").count() == 1
    assert_invariants([run], survivors=survivors)


def test_a_connection_lost_in_the_middle_of_a_step_resumes_the_run(worker, fake_openai, make_ad):
    """The worker's connection is terminated while it writes a tool step (the model's
    reply with the call's result and draft): a transient fault. The worker takes the run
    again and resumes from what is stored (the step was rolled back): it asks the model
    again and executes the call once; the run does not fail."""
    ad = make_ad(language="en")
    fake_openai.script(
        turn(tool_calls=[call("create_music_draft", {"prompt": "warm acoustic pop"})]),
        turn(tool_calls=[call("create_music_draft", {"prompt": "warm acoustic pop"})]),
        turn("Music v1 is ready."),
    )
    conversation = conversation_of(ad=ad)
    run = brief_send(request=RunRequest(ad=ad, conversation=conversation))

    with lock_holder() as holder:
        holder.execute(  # as above: the worker's write of message #3 waits for us
            "INSERT INTO conversations_message (conversation_id, seq, role, text, tool_calls, "
            "tool_call_id, name, is_error, provider_data, tokens, created_at) "
            "VALUES (%s, 3, 'user', 'lock', '[]', '', '', false, '{}', 0, now())",
            [conversation.pk],
        )
        pids = wait_for(
            lambda: backends_waiting_on_lock('INSERT INTO "conversations_message"'),
            what="the worker to wait on the tool message insert",
        )
        with psycopg.connect(database_url(), autocommit=True) as own:
            # Returns once the backend has exited (before the lock is released below).
            own.execute("SELECT pg_terminate_backend(%s, 10000)", [pids[0]])
        holder.rollback()

    wait_until_finished(run)  # resumed
    assert run.status == "succeeded", f"{run.error_code}: {run.error_message}"
    assert run.final_message == "Music v1 is ready."
    assert list(Draft.objects.filter(ad=ad).values_list("kind", "version")) == [("music", 1)]
    tools = Message.objects.filter(conversation=conversation, role="tool")
    assert [(m.seq, m.name, m.is_error) for m in tools] == [(3, "create_music_draft", False)]
    assert len(fake_openai.requests) == 3  # the reply rolled back with its step is asked again
    # The request whose reply was rolled back is on record as interrupted.
    calls = ModelCall.objects.filter(run=run).order_by("created_at")
    assert [(c.round, c.error_code) for c in calls] == [(1, "interrupted"), (1, ""), (2, "")]
    started = RunEvent.objects.filter(run=run, type="run.started").order_by("seq")
    assert [e.data["resumed"] for e in started] == [False, True]
    assert "resuming it from what is stored" in worker.log.read_text()
    assert worker.starts == 1  # the same worker, no recovery sweep
    assert_invariants([run])


def test_killed_while_writing_the_answer_and_the_run_s_end(worker, fake_openai, make_ad):
    """The final answer and the run's end are one statement: the worker is killed while
    that statement waits, PostgreSQL completes it whole once it can, and the recovery
    finds the run ended with its answer; nothing is asked again."""
    ad = make_ad(language="en")
    fake_openai.script(
        turn(tool_calls=[call("create_music_draft", {"prompt": "warm acoustic pop"})]),
        turn("Music v1 is ready.", delay=1.0),
    )
    run = brief_send(request=RunRequest(ad=ad))
    fake_openai.wait_for_requests(2)  # the final model request

    with lock_holder() as holder:
        # With the final reply the worker marks the run done and adds its usage to the
        # conversation; holding the conversation row (NO KEY: inserts that reference it
        # still pass) makes that statement, the answer's insert in it, wait for us.
        holder.execute(
            "SELECT 1 FROM conversations_conversation WHERE id = %s FOR NO KEY UPDATE",
            [run.conversation_id],
        )
        pids = wait_for(  # the finish's statement begins so (pg_stat_activity cuts it)
            lambda: backends_waiting_on_lock('WITH f AS (UPDATE "conversations_run"'),
            what="the worker to wait on finishing the run with its answer",
        )
        last = Message.objects.filter(conversation=run.conversation).order_by("-seq").first()
        assert (last.seq, last.role) == (3, "tool")  # the answer is not stored yet
        run.refresh_from_db()
        assert run.status == "running"
        survivors = stored([run.conversation])
        pids += backends_waiting_on_lock("UPDATE")  # its heartbeat waits on the row too
        kill_blocked_worker(worker, holder, pids)

    # The orphaned statement was completed whole: the answer with the run's end.
    run.refresh_from_db()
    assert (run.status, run.final_message) == ("succeeded", "Music v1 is ready.")
    final = Message.objects.filter(conversation=run.conversation).order_by("-seq").first()
    assert (final.seq, final.role, final.text) == (4, "assistant", "Music v1 is ready.")

    restart_and_recover(worker, run)
    wait_until_finished(run)  # recovered

    assert len(fake_openai.requests) == 2  # the answer was not asked for again
    assert RunEvent.objects.filter(run=run, type="run.finished").count() == 1
    assert Message.objects.filter(conversation=run.conversation).count() == 4
    assert list(Draft.objects.filter(ad=ad).values_list("kind", "version")) == [("music", 1)]
    assert_invariants([run], survivors=survivors)


# --- 2. the broker restarted with runs queued and running ----------------------------------


def director(body: dict) -> Turn:
    """Each user turn: a music draft, then a short answer; "slowly" makes the first
    reply take a while, long enough to stop the broker under it."""
    last = body["messages"][-1]
    if last["role"] == "user":
        delay = 2.0 if "slowly" in last["content"] else 0.0
        return Turn(
            tool_calls=(call("create_music_draft", {"prompt": last["content"]}),), delay=delay
        )
    return Turn(text="done")


class TestBrokerRestart:
    @pytest.fixture
    def broker_url(self, private_redis):
        return private_redis.url

    @pytest.fixture
    def worker_extra_env(self):
        """The worker sweeps only as it starts: the test's own sweep, after the restart,
        is the one that sends the stranded runs."""
        return {"ADSTUDIO_RECOVERY_INTERVAL": "3600"}

    def test_runs_survive_a_redis_restart(self, worker, private_redis, fake_openai, user, make_ad):
        fake_openai.responder = director
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {token_create(user=user)[1]}")
        first_ad, second_ad = make_ad(language="en"), make_ad(language="en", title="second")
        first, second = conversation_of(ad=first_ad), conversation_of(ad=second_ad)

        def chat(conversation: Conversation, text: str) -> Run:
            response = api.post(
                f"/api/ads/{conversation.ad_id}/chat",
                {"message": text, "conversationId": str(conversation.pk)},
                format="json",
            )
            assert response.status_code == 202, response.content
            return Run.objects.get(pk=response.json()["runId"])

        running = chat(first, "upbeat music, slowly")
        fake_openai.wait_for_requests(1)  # the first model request
        queued = chat(first, "now calmer")  # waits for `running` in the same conversation
        survivors = stored([first, second])

        with private_redis.down():
            # The API still accepts messages: the run is stored and marked for recovery.
            during = [chat(second, "jingle for the second ad"), chat(first, "and shorter")]
            for run in during:
                assert (run.status, run.error_code) == ("queued", ENQUEUE_FAILED)
                assert "retried" in run.error_message
            # The running run finishes without the broker; starting its successor fails.
            wait_until_finished(running)
            assert running.status == "succeeded", running.error_message
            # Its successor is sent when it finishes, and that send fails: it is marked for
            # recovery. (Unless the message sent when it was asked for, delivered just
            # before the outage, reached the worker after its turn came: then it runs.)
            marked = Run.objects.filter(pk=queued.pk, error_code=ENQUEUE_FAILED)
            taken = Run.objects.filter(pk=queued.pk, claims__gt=0)
            wait_for(
                lambda: marked.exists() or taken.exists(),
                what="the queued run to be marked for recovery",
            )
            stranded = {queued.pk} if marked.exists() else set()

        recovered = runs_recover()
        assert set(recovered) == {*stranded, *(r.pk for r in during)}
        runs = [running, queued, *during]
        for run in runs:
            wait_until_finished(run)  # after the restart
        assert [(r.status, r.error_code) for r in runs] == [("succeeded", "")] * 4
        assert_invariants(runs, survivors=survivors)
        users = Message.objects.filter(conversation=first, role="user").order_by("seq")
        assert [m.text for m in users] == ["upbeat music, slowly", "now calmer", "and shorter"]
        assert worker.starts == 1  # the same worker reconnected to the restarted broker
        # Nothing is put back on a broker that is gone (the runs are in PostgreSQL), so
        # no failed restore and no emergency dump of the delivered messages.
        log = worker.log.read_text()
        assert "Connection to broker lost" in log
        assert "UNABLE TO RESTORE" not in log and "EMERGENCY DUMP" not in log


# --- 3. every database connection dropped mid-run ------------------------------------------


def terminate_worker_backends() -> list[str]:
    """What the worker sees of a Postgres restart: every one of its connections dropped,
    each backend gone when this returns (a terminated backend exits a moment later, and a
    connection checked in that moment would still pass for alive).
    The test process's own pool is left alone: it is the harness, not the subject, and a
    pool whose reconnects fail mid-drop backs off for longer than the next test waits."""
    with psycopg.connect(database_url(), autocommit=True) as own:
        rows = own.execute(
            "SELECT application_name, pg_terminate_backend(pid, 10000) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            [WORKER_APP],
        ).fetchall()
    return [name for name, terminated in rows if terminated]


def test_a_worker_recovers_its_database_connections(worker, fake_openai, make_ad):
    """The model answers the moment the database has dropped every connection: the run
    carries on on new connections, and the same worker process serves a later run."""
    ad = make_ad(language="en")
    terminated: list[str] = []

    def turn_during_restart(body: dict) -> Turn:
        # The worker waits on the model, its connections idle in its pool; Postgres
        # restarts.
        terminated.extend(terminate_worker_backends())
        fake_openai.responder = None
        fake_openai.script(
            turn("Music v1 is ready."),
            turn(tool_calls=[call("create_music_draft", {"prompt": "more upbeat"})]),
            turn("Music v2 is ready."),
        )
        return turn(tool_calls=[call("create_music_draft", {"prompt": "warm acoustic pop"})])

    fake_openai.responder = turn_during_restart
    run = brief_send(request=RunRequest(ad=ad))
    fake_openai.wait_for_requests(1)  # the first model request
    survivors = stored([run.conversation])

    wait_until_finished(run)
    assert WORKER_APP in terminated, terminated  # the worker's connections were dropped
    assert run.status == "succeeded", f"{run.error_code}: {run.error_message}"
    later = send_message(
        request=RunRequest(conversation=run.conversation, text="make it more upbeat")
    )
    wait_until_finished(later)
    assert later.status == "succeeded", f"{later.error_code}: {later.error_message}"
    assert worker.starts == 1 and worker.process.poll() is None  # the same process
    assert list(Draft.objects.filter(ad=ad).order_by("version").values_list("version")) == [
        (1,),
        (2,),
    ]
    assert_invariants([run, later], survivors=survivors)
