"""A run's record-keeping: its progress events (the event contract of docs/api.md, one
builder per event type), the streamed text as events, and what each step writes (its
messages, model calls, counters and events, as one statement per step).

The loop (``conversations.agent.loop``) decides what happens; this module writes it down, and
only while the worker still holds the run: every write checks the worker's claim token in
its own statement (``holder_fence``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import providers
from adstudio.db.batch import Batch, Fence, insert_rows, new_row
from adstudio.db.connection import release_connection
from adstudio.db.storable import without_nul
from adstudio.tools import WrittenDraft
from conversations.models import (
    Conversation,
    ModelCall,
    Run,
    RunEvent,
    RunEventType,
    RunStatus,
)
from conversations.models import Message as MessageRow
from conversations.record.messages import row_fields
from conversations.record.tokens import message_tokens
from drafts.models import Draft
from providers import (
    Message,
    ModelResponse,
    StopReason,
    ToolCall,
    Usage,
)
from providers.pricing import usage_cost

TEXT_EVENT_INTERVAL = 0.25  # seconds between streamed text events
INTERRUPTED = "interrupted"  # ModelCall.error_code of a request whose reply never came
# What a model step writes of the run, as values (this worker is their only writer).
RUN_COUNTERS = (
    "rounds",
    "provider",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost",
    "cost_exact",
)

Event = tuple[RunEventType, dict[str, Any]]


class ClaimLost(Exception):
    """Another worker has claimed the run since this one did (``Run.claims`` moved on): the
    step was not written, and the run is the other worker's to go on with and finish."""


class StepCancelled(Exception):
    """The run's cancel was accepted before its step's draft was written: nothing of the
    step was written, and the run ends cancelled."""


def holder_fence(run: Run) -> Fence:
    """The condition of every write of a run's worker: the run is running under the claim
    token the worker took it with (``run.claims``). Checked in the write's own statement,
    so a worker whose run was taken over writes nothing more of it, even in the moment
    between another worker's claim and its own next heartbeat."""
    return Fence(Run, run.pk, {"claims": run.claims, "status": RunStatus.RUNNING})


def uncancelled_fence(run: Run) -> Fence:
    """``holder_fence``, and no cancel accepted: the condition of a step that writes a
    draft. A cancel takes the run's row ``FOR UPDATE``, which waits for the step's lock or
    is seen by its statement: a draft is written before a cancel is accepted, or never."""
    return Fence(
        Run,
        run.pk,
        {"claims": run.claims, "status": RunStatus.RUNNING, "cancel_requested": False},
    )


def _still_held(run: Run) -> bool:
    fence = holder_fence(run)
    return Run.objects.filter(pk=run.pk, **fence.values).exists()


# --- Events: one builder per type -----------------------------------------------------


def run_started_event(*, resumed: bool) -> Event:
    return RunEventType.RUN_STARTED, {"resumed": resumed}


def model_call_started(*, round_no: int) -> Event:
    return RunEventType.MODEL_CALL_STARTED, {"round": round_no}


def text_delta(delta: str) -> Event:
    return RunEventType.TEXT, {"delta": delta}


def text_whole(text: str) -> Event:
    """A reply's text when none of it was streamed."""
    return RunEventType.TEXT, {"text": text}


def text_reset() -> Event:
    """The text streamed so far was a failed attempt's: clients drop it."""
    return RunEventType.TEXT, {"reset": True}


def tool_call_started(call: ToolCall) -> Event:
    return RunEventType.TOOL_CALL_STARTED, {
        "toolCallId": call.id,
        "name": call.name,
        "arguments": call.arguments,
    }


def tool_call_finished(call: ToolCall, *, is_error: bool, result: dict[str, Any]) -> Event:
    return RunEventType.TOOL_CALL_FINISHED, {
        "toolCallId": call.id,
        "name": call.name,
        "isError": is_error,
        "result": result,
    }


def draft_created(call: ToolCall, draft: WrittenDraft) -> Event:
    return RunEventType.DRAFT_CREATED, {
        "kind": draft.kind,
        "version": draft.version,
        "draftId": draft.id,
        "toolCallId": call.id,
    }


def run_finished_event(*, status: str, stop_cause: str, error_code: str) -> Event:
    return RunEventType.RUN_FINISHED, {
        "status": status,
        "stopCause": stop_cause,
        "errorCode": error_code,
    }


class EventLog:
    """Appends a run's progress events with consecutive sequence numbers.

    Only the worker holding the run writes its events, so the next number is read once
    (or known, for a new run) and then counted locally; the unique (run, seq) constraint
    is the backstop, and ``append`` writes nothing once another worker has claimed the run.
    """

    def __init__(self, run: Run, *, next_seq: int | None = None) -> None:
        self.run = run
        self._next = next_seq
        self.lost = False  # another worker has claimed the run: nothing more is written

    def append(self, *events: Event) -> list[RunEvent]:
        """Write ``events`` now, while this worker holds the run (``holder_fence``); once it
        does not, nothing is written (``lost``): streamed text is no reason to stop a step
        whose own write will find out."""
        rows = self.numbered(*events)
        if not rows or self.lost:
            return []
        batch = Batch(fence=holder_fence(self.run))
        batch.insert(*rows)
        if not batch.write():
            self.lost = True
            return []
        return rows

    def numbered(self, *events: Event) -> list[RunEvent]:
        """The next rows of the log, for the caller to write (with other rows of a step)."""
        if not events:
            return []
        if self._next is None:
            last = (
                RunEvent.objects.filter(run=self.run)
                .order_by("-seq")
                .values_list("seq", flat=True)
                .first()
            )
            self._next = (last or 0) + 1
        rows = [
            new_row(RunEvent, run_id=self.run.pk, seq=self._next + i, type=type, data=data)
            for i, (type, data) in enumerate(events)
        ]
        self._next += len(rows)
        return rows


class TextEvents:
    """Turns streamed text deltas into a few progress events, not one per token.

    Text that arrives while the model call is in progress is written as it comes for
    the reply's first words, then at most every ``TEXT_EVENT_INTERVAL``, on a connection
    taken from the pool for the write and handed back at once: a run waiting on its
    provider holds none, so a burst of replies never finds the pool taken by runs that
    wait. What is left when the reply is complete is
    staged with the reply's step (``remaining``), not written on its own.

    A failed attempt's text is not the reply: what is still buffered is dropped, and if
    some was sent, a ``text`` event with ``reset`` tells clients to drop it too."""

    def __init__(self, events: EventLog) -> None:
        self.events = events
        self.buffer: list[str] = []
        # The first words are written at once: a provider that pauses after them (or a
        # person who stops it then) must not leave them unseen in the buffer.
        self.last = -math.inf
        self.sent_any = False
        self.sent_this_attempt = False

    def attempt_ended(self, *, failed: bool) -> None:
        if failed:
            self.buffer.clear()
            if self.sent_this_attempt:
                self.events.append(text_reset())
                self.sent_any = False
        self.sent_this_attempt = False

    def add(self, delta: str) -> None:
        self.buffer.append(without_nul(delta))
        if time.monotonic() - self.last >= TEXT_EVENT_INTERVAL:
            self._write()

    def _write(self) -> None:
        if self.buffer:
            self.events.append(text_delta("".join(self.buffer)))
            release_connection()
            self.buffer.clear()
            self.sent_any = self.sent_this_attempt = True
        self.last = time.monotonic()

    def remaining(self) -> list[Event]:
        """The text not written yet, as events for the caller to stage with its step."""
        if not self.buffer:
            return []
        event = text_delta("".join(self.buffer))
        self.buffer.clear()
        self.sent_any = True
        return [event]


# --- What a run writes ----------------------------------------------------------------


@dataclass
class RunLog:
    """The stored side of a run: the history as loaded and appended to, and the current
    step's writes, staged and written as one statement (and one commit) per step, each
    only while the worker holds the run (``holder_fence``)."""

    run: Run
    conversation: Conversation
    # The history sent to the model (after the summary): rows as loaded (``history_rows``),
    # then the rows this run appends.
    rows: list
    next_seq: int
    events: EventLog
    batch: Batch = field(default_factory=Batch)
    lost: bool = False  # a write found the run claimed by another worker
    cancelled: bool = False  # a step's draft was refused: the run's cancel came first

    def __post_init__(self) -> None:
        self.batch.fence = holder_fence(self.run)

    def append(self, message: Message, *, extra: dict | None = None) -> MessageRow:
        """Stage ``message`` as the conversation's next row."""
        # Related rows by id: an instance set on a relation costs its descriptor here and
        # a check in the write, on every row.
        row = new_row(
            MessageRow,
            conversation_id=self.conversation.pk,
            run_id=self.run.pk,
            seq=self.next_seq,
            tokens=message_tokens(message),
            **{**row_fields(message), **(extra or {})},
        )
        self.batch.insert(row)
        self.next_seq += 1
        self.rows.append(row)
        return row

    def event(self, *events: Event) -> None:
        """Stage ``events``, numbered next in the run's log."""
        self.batch.insert(*self.events.numbered(*events))

    def write(self) -> None:
        """Write the staged step. Raises ``ClaimLost`` when another worker has claimed the
        run, ``StepCancelled`` when the step writes a draft and the run's cancel was
        accepted: then nothing of the step was written."""
        drafts = self.batch.holds(Draft)
        if drafts:
            self.batch.fence = uncancelled_fence(self.run)
        try:
            written = self.batch.write()
        finally:
            self.batch.fence = holder_fence(self.run)
        if written:
            return
        if drafts and _still_held(self.run):
            self.cancelled = True
            raise StepCancelled(f"run {self.run.pk} was cancelled before its draft was written")
        self.lost = True
        raise ClaimLost(f"run {self.run.pk} was claimed by another worker")

    def count_usage(self, response: ModelResponse) -> None:
        """Stage what a model call cost, added to the run's counters. Adapters estimate the
        usage (``exact=False``) when the provider sent none."""
        run, usage = self.run, response.usage
        run.prompt_tokens += usage.prompt_tokens
        run.completion_tokens += usage.completion_tokens
        run.cached_tokens += usage.cached_prompt_tokens
        run.cost += usage_cost(model=response.model, usage=usage)
        run.cost_exact = run.cost_exact and usage.exact
        self.batch.update(Run, run.pk, **{name: getattr(run, name) for name in RUN_COUNTERS})

    def model_call(self, round_no: int, attempt: providers.Attempt) -> None:
        """Record one attempt at a model call: a success with the reply's step; a failure
        now, since a retry or another provider may follow and a worker that dies before
        the step is written must not take the record of a paid request with it."""
        row = _model_call_row(self.run, round_no, attempt)
        if attempt.error is None:
            self.batch.insert(row)
        else:
            insert_rows(row)

    def cancelled_call(
        self, round_no: int, attempt: providers.Attempt, *, prompt_tokens: int
    ) -> None:
        """Record an attempt ended by the run's cancel while the model answered. The
        request was sent and may be billed, its usage unknown: its row counts the
        request's estimated ``prompt_tokens``, and the run counts them, its cost no
        longer exact, so a cancelled run's usage is the sum of its calls."""
        row = _model_call_row(self.run, round_no, attempt)
        self._write_estimated_call(row, model=attempt.model, prompt_tokens=prompt_tokens)

    def interrupted_call(
        self, *, route: list[providers.ProviderBinding], prompt_tokens: int
    ) -> None:
        """Record the model call a resumed run's worker was waiting on when it died or
        lost the database (``interrupted_call_row``). Its ``prompt_tokens`` are estimated
        from the request the run sends again now; the stats then count every provider
        request."""
        binding = route[0]
        row = interrupted_call_row(self.run, provider=binding.name, model=binding.model)
        if row is not None:
            self._write_estimated_call(row, model=binding.model, prompt_tokens=prompt_tokens)

    def _write_estimated_call(self, row: ModelCall, *, model: str, prompt_tokens: int) -> None:
        """A call whose usage never came back: its row and the run count the estimated
        ``prompt_tokens``, the run's cost no longer exact; written at once, fenced."""
        run = self.run
        usage = Usage(prompt_tokens=prompt_tokens, exact=False)
        row.prompt_tokens, row.usage_exact = usage.prompt_tokens, False
        run.prompt_tokens += usage.prompt_tokens
        run.cost += usage_cost(model=model, usage=usage)
        run.cost_exact = False
        writes = Batch(fence=holder_fence(run))
        writes.insert(row)
        writes.update(Run, run.pk, prompt_tokens=run.prompt_tokens, cost=run.cost, cost_exact=False)
        if not writes.write():
            self.lost = True
            raise ClaimLost(f"run {run.pk} was claimed by another worker")


def interrupted_call_row(run: Run, *, provider: str, model: str) -> ModelCall | None:
    """The ``ModelCall`` row, not saved, of the call ``run``'s worker was waiting on when it
    died or lost the database, or whose reply it had not stored yet (a reply that calls
    tools is stored with its calls' results); None when there was none or a row
    records it already. The request was sent (its round's ``model_call.started`` is
    written before it) and may be paid for, but its round never ended and no row says
    so."""
    last = (
        RunEvent.objects.filter(run=run, type=RunEventType.MODEL_CALL_STARTED)
        .order_by("-seq")
        .values_list("data", "created_at")
        .first()
    )
    if last is None or last[0].get("round", 0) <= run.rounds:
        return None  # the last call made came back and was stored
    round_no, started_at = last[0]["round"], last[1]
    calls = ModelCall.objects.filter(run=run, round=round_no)
    if calls.filter(error_code=INTERRUPTED, created_at__gte=started_at).exists():
        return None  # recorded by an earlier resume
    return ModelCall(
        run=run,
        round=round_no,
        attempt=calls.count() + 1,
        provider=provider,
        model=model,
        usage_exact=False,
        finish_reason=StopReason.ERROR,
        error_code=INTERRUPTED,
        error="No reply was stored: the worker stopped while it waited for the model, or "
        "before the reply's step was written (the prompt tokens are estimated).",
    )


def _model_call_row(run: Run, round_no: int, attempt: providers.Attempt) -> ModelCall:
    response: ModelResponse | None = attempt.response
    usage = response.usage if response else Usage()
    error = attempt.error
    return new_row(
        ModelCall,
        run_id=run.pk,
        round=round_no,
        attempt=attempt.attempt,
        provider=attempt.provider,
        model=attempt.model,
        latency_ms=attempt.latency_ms,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        cached_tokens=usage.cached_prompt_tokens,
        usage_exact=usage.exact and bool(response) and (usage.prompt_tokens > 0),
        finish_reason=response.stop_reason if response else StopReason.ERROR,
        provider_request_id=(response.request_id if response else "")[:128],
        error_code=error.code if error else "",
        error=str(error)[:2000] if error else "",
    )
