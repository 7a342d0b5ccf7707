"""The step gate: a bounded, first-come first-served limit on runs computing at once,
given back while a run waits on its provider."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from conversations.agent.loop import run_agent
from conversations.models import Conversation, Run, RunEvent, RunEventType, RunStatus
from conversations.runs.step_gate import StepGate, step_gate
from testbed.fake_openai import turn


def _wait_until(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def _start(target, *args) -> threading.Thread:
    thread = threading.Thread(target=target, args=args, daemon=True)
    thread.start()
    return thread


def test_no_more_threads_than_slots_compute_at_once():
    gate = StepGate(2)
    active = 0
    most = 0
    lock = threading.Lock()

    def work() -> None:
        nonlocal active, most
        with gate.held():
            with lock:
                active += 1
                most = max(most, active)
            time.sleep(0.02)
            with lock:
                active -= 1

    threads = [_start(work) for _ in range(8)]
    for thread in threads:
        thread.join(timeout=5)
    assert not any(thread.is_alive() for thread in threads)
    assert most <= 2
    assert gate.waiting == 0 and not gate.holding


def test_slots_go_to_waiters_in_arrival_order_and_a_releaser_queues_behind_them():
    gate = StepGate(1)
    order: list[str] = []
    handed_back = threading.Event()

    def waiter(name: str) -> None:
        with gate.held():
            order.append(name)

    def first() -> None:
        with gate.held():
            for number in range(5):
                _start(waiter, f"w{number}")
                _wait_until(lambda n=number: gate.waiting == n + 1)
            with gate.released():  # like a model call: back in the queue after it
                handed_back.set()
            order.append("first again")

    thread = _start(first)
    thread.join(timeout=5)
    assert handed_back.is_set() and not thread.is_alive()
    _wait_until(lambda: len(order) == 6)
    assert order == ["w0", "w1", "w2", "w3", "w4", "first again"]


def test_held_is_reentrant_in_one_thread():
    """A run finished in eager mode starts the conversation's next run inside itself."""
    gate = StepGate(1)
    states: list[bool] = []

    def nested() -> None:
        with gate.held():
            with gate.held():
                states.append(gate.holding)
            states.append(gate.holding)
        states.append(gate.holding)

    thread = _start(nested)
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert states == [True, True, False]


def test_a_released_slot_serves_another_thread_meanwhile():
    gate = StepGate(1)
    other_ran = threading.Event()

    def other() -> None:
        with gate.held():
            other_ran.set()

    def holder() -> None:
        with gate.held():
            with gate.released():
                assert not gate.holding
                _start(other)
                assert other_ran.wait(5)
            assert gate.holding

    thread = _start(holder)
    thread.join(timeout=5)
    assert not thread.is_alive() and other_ran.is_set()


def test_zero_slots_is_no_gate_and_negative_is_refused():
    gate = StepGate(0)
    with gate.held():
        assert not gate.holding
        with gate.released():
            pass
    with pytest.raises(ValueError, match="slots"):
        StepGate(-1)


@pytest.mark.django_db(transaction=True)
def test_runs_wait_on_their_provider_outside_the_gate(fake_providers, make_ad, settings):
    """With one slot, a second run still reaches the provider while the first waits on it."""
    settings.ADSTUDIO_STEP_SLOTS = 1
    arrivals = threading.Condition()
    arrived = 0

    def both_in_flight(body: dict) -> object:
        nonlocal arrived
        # each reply waits for the other request; a run that held the gate through its
        # model call would keep the other run from sending one
        with arrivals:
            arrived += 1
            arrivals.notify_all()
            together = arrivals.wait_for(lambda: arrived >= 2, timeout=3)
        return turn("in flight together" if together else "alone")

    fake_providers.responder = both_in_flight
    runs = [
        Run.objects.create(conversation=Conversation.objects.create(ad=make_ad()), input_text="hi")
        for _ in range(2)
    ]

    def execute(run: Run) -> None:
        run_agent(run.pk)
        connection.close()

    threads = [_start(execute, run) for run in runs]
    for thread in threads:
        thread.join(timeout=20)
    assert step_gate().slots == 1 and step_gate().waiting == 0
    assert [Run.objects.get(pk=run.pk).final_message for run in runs] == [
        "in flight together",
        "in flight together",
    ]


@pytest.mark.django_db(transaction=True)
def test_runs_waiting_on_their_provider_hold_no_connection(fake_providers, make_ad, settings):
    """Runs that have streamed some text and wait for the rest hold no pooled connection
    (each text write hands its connection back), so runs waiting never take the
    connections that the runs computing need: with 20 pooled and 76 runs streaming, one
    worker once stalled until the gate's timeout."""
    settings.ADSTUDIO_STEP_SLOTS = 1
    # the first text arrives after the flush interval (written at once), the rest 2 s later
    fake_providers.responder = lambda body: turn(
        "Hello families, meet Premium.", delay=0.4, pause_after=2, pause=2.0
    )
    runs = [
        Run.objects.create(
            conversation=Conversation.objects.create(ad=make_ad(language="en")), input_text="hi"
        )
        for _ in range(6)
    ]

    def execute(run: Run) -> None:
        run_agent(run.pk)
        connection.close()

    threads = [_start(execute, run) for run in runs]
    texts = RunEvent.objects.filter(run__in=runs, type=RunEventType.TEXT)
    _wait_until(lambda: texts.count() == len(runs), timeout=10)
    connection.close()  # the test's own

    def held() -> int:
        stats = connection.pool.get_stats()
        return stats["pool_size"] - stats["pool_available"]

    # The last text write may still be handing its connection back as its row shows (a
    # busy machine widens that moment); then, for the 2 s the runs wait, none is held.
    _wait_until(lambda: held() <= 1, timeout=1)
    in_use = []
    for _ in range(10):
        in_use.append(held())
        time.sleep(0.02)
    assert max(in_use) <= 1, in_use  # at most the heartbeats' beat
    assert not Run.objects.filter(pk__in=[r.pk for r in runs], status=RunStatus.SUCCEEDED)
    for thread in threads:
        thread.join(timeout=20)
    for run in runs:
        run.refresh_from_db()
        assert run.status == RunStatus.SUCCEEDED
        streamed = [
            e.data["delta"]
            for e in RunEvent.objects.filter(run=run, type=RunEventType.TEXT).order_by("seq")
        ]
        # written while streaming, and what was left, with the reply's step
        assert streamed[0] == "Hello fa" and len(streamed) >= 2
        assert "".join(streamed) == "Hello families, meet Premium."


def test_a_waiter_goes_ahead_without_a_slot_when_the_holder_is_stuck():
    gate = StepGate(1, max_wait=0.5)
    has_slot = threading.Event()
    stuck = threading.Event()
    went_ahead: list[bool] = []

    def holder() -> None:
        with gate.held():
            has_slot.set()
            stuck.wait(5)

    def waiter() -> None:
        with gate.held():
            went_ahead.append(gate.holding)

    blocking = _start(holder)
    assert has_slot.wait(5)
    thread = _start(waiter)
    thread.join(timeout=5)
    assert went_ahead == [False] and gate.waiting == 0
    stuck.set()
    blocking.join(timeout=5)
    # the slot came back once: one thread gets it, a second one waits
    with gate.held():
        assert gate.holding
        second = _start(waiter)
        _wait_until(lambda: gate.waiting == 1)
    second.join(timeout=5)
    assert went_ahead == [False, True]
