"""The agent loop: one run answers one user turn through model calls and tool calls.

Each step returns what happens next (``RunTools``, ``Final`` or ``Stop``); every message,
model call and event is persisted as it happens, so a run that dies is resumed from its
last persisted step by the recovery sweep and no tool call is executed twice.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from adstudio.db import Batch, insert_rows, release_connection
from adstudio.storable import without_nul
from adstudio.tools import ToolContext
from conversations import providers
from conversations.heartbeat import Heartbeat
from conversations.history import (
    history_rows,
    make_valid,
    recent_turns_within,
    row_to_message,
    split_turns,
    storable_reply,
    tool_calls_to_json,
)
from conversations.models import (
    Conversation,
    ModelCall,
    Role,
    Run,
    RunEvent,
    RunEventType,
    RunStatus,
    StopCause,
)
from conversations.models import Message as MessageRow
from conversations.pricing import usage_cost
from conversations.prompts import FINAL_ANSWER_NUDGE, system_prompt
from conversations.providers.base import (
    AssistantMessage,
    GenerateOptions,
    GenerateRequest,
    Message,
    ModelResponse,
    ProviderError,
    StopReason,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from conversations.services import (
    Claim,
    EventLog,
    history_whole,
    run_claim,
    run_finish,
    run_held,
)
from conversations.step_gate import step_gate
from conversations.tokens import count_tokens, message_tokens
from conversations.tools import ToolOutcome, execute_tool_call, tool_specs

logger = logging.getLogger(__name__)

SUMMARY_SYSTEM_PROMPT = (
    "You summarise the earlier part of a conversation between a user and an audio-ad "
    "creative director. Keep every fact that later turns may need: the brief, the voices "
    "chosen (names and ids), each draft version created and what it contained, and the "
    "user's requests and preferences. Plain prose, at most 250 words."
)
TEXT_EVENT_INTERVAL = 0.25  # seconds between streamed text events
_RUN_COUNTERS = (
    "rounds",
    "provider",
    "model",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cost",
    "cost_exact",
)


@dataclass(frozen=True)
class RunTools:
    calls: tuple[ToolCall, ...]
    message_seq: int


@dataclass(frozen=True)
class Final:
    text: str
    cause: StopCause = StopCause.FINAL_ANSWER


@dataclass(frozen=True)
class Stop:
    status: RunStatus
    cause: StopCause
    code: str = ""
    message: str = ""


@dataclass(frozen=True)
class CallModel:
    final: bool  # the round limit is reached: one last call, without tools


@dataclass
class RunState:
    """Everything one run works with; built once, then appended to as the run goes."""

    run: Run
    conversation: Conversation
    route: list[providers.ProviderBinding]
    # The history sent to the model (after the summary): rows as loaded (``history_rows``),
    # then the messages this run appends.
    rows: list
    next_seq: int
    events: EventLog
    heartbeat: Heartbeat
    failures: Counter = field(default_factory=Counter)
    messages: list[Message] = field(default_factory=list)
    # The current step's writes: one statement (and one commit) per step, not per row.
    batch: Batch = field(default_factory=Batch)
    # What comes after the step being written, when it was decided with its writes.
    planned: CallModel | Stop | None = None
    # time.monotonic() after which no new step starts: the task's soft time limit, which
    # Celery's threads pool does not enforce itself.
    deadline: float = float("inf")

    @property
    def ad(self):
        return self.conversation.ad


_TOO_LONG = "The run took too long (ADSTUDIO_TASK_SOFT_TIME_LIMIT) and was stopped."
# Never written: _run_agent leaves a run taken over to the worker that holds it now.
_TAKEN_OVER = Stop(RunStatus.FAILED, StopCause.ERROR, "taken_over", "Taken over.")


def run_agent(run_id: uuid.UUID | str) -> None:
    """Execute (or resume) the run; safe to call twice: a second call finds nothing to do.

    The run computes only while it holds a slot of the process's step gate, and gives the
    slot back while it waits on its provider."""
    with step_gate().held():
        _run_agent(run_id)


class _ResumeFromDatabase(Exception):
    """What the worker holds of the run in memory can no longer be trusted: it takes the
    run again and resumes from what the database holds."""


# A run resumes from the database at most this many times in one task; past that a
# history that will not come out whole ends the run failed, and a database that stays
# away leaves the run to the recovery sweep.
_MAX_RESUMES = 5
_INCOMPLETE = (
    "The run's stored history stayed incomplete after it was resumed; staff can see "
    "the details in the logs."
)


def _run_agent(run_id: uuid.UUID | str) -> None:
    run_id = uuid.UUID(str(run_id))
    claim = run_claim(run_id=run_id)
    resumes = 0
    while claim is not None:
        try:
            _execute(claim, give_up=resumes >= _MAX_RESUMES)
            return
        except _ResumeFromDatabase as reason:
            resumes += 1
            logger.warning("run %s: %s; resuming it from what is stored", run_id, reason)
            claim = _claim_again(run_id, holder=claim.run.claims)


def _claim_again(run_id: uuid.UUID, *, holder: int) -> Claim | None:
    """The run taken again by the worker that holds it, once the database answers; None
    if another worker has taken it meanwhile, it has ended, or the database stays away
    longer than a heartbeat may go stale (the recovery sweep resumes it then)."""
    deadline = time.monotonic() + settings.ADSTUDIO_RUN_STALE_AFTER
    delay = 0.1
    while True:
        connection.close()  # a broken connection goes back to the pool, which drops it
        try:
            return run_claim(run_id=run_id, holder=holder)
        except (OperationalError, InterfaceError) as exc:
            if time.monotonic() + delay > deadline:
                logger.warning(
                    "run %s: the database is still unreachable (%s); the recovery sweep "
                    "resumes the run",
                    run_id,
                    exc,
                )
                return None
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def _execute(claim: Claim, *, give_up: bool) -> None:
    """Drive the claimed run to its end and finish it. Raises ``_ResumeFromDatabase``
    when the database connection is lost (a restart, a terminated backend): a transient
    fault, after which the step that failed may or may not be stored. With ``give_up``,
    a history that is not whole ends the run failed instead."""
    run = claim.run
    outcome: Final | Stop
    heartbeat = Heartbeat(
        run.pk,
        interval=settings.ADSTUDIO_HEARTBEAT_INTERVAL,
        cancelled=claim.cancel_requested,
        claim=run.claims,
    )
    deadline = time.monotonic() + settings.CELERY_TASK_SOFT_TIME_LIMIT
    try:
        with heartbeat:
            state = _load_state(run, heartbeat, claim.events)
            if claim.resumed:
                _record_interrupted_call(state)
            state.deadline = deadline
            outcome = _drive(state)
    except (OperationalError, InterfaceError) as exc:
        raise _ResumeFromDatabase(f"its database connection was lost ({exc})") from exc
    except providers.ProviderUnavailable as exc:
        outcome = Stop(RunStatus.FAILED, StopCause.ERROR, "provider_unavailable", str(exc))
    except ProviderError as exc:
        outcome = Stop(RunStatus.FAILED, StopCause.ERROR, exc.code, str(exc))
    except SoftTimeLimitExceeded:
        outcome = Stop(RunStatus.FAILED, StopCause.ERROR, "timeout", _TOO_LONG)
    except Exception:
        logger.exception("run %s failed", run.pk)
        outcome = Stop(
            RunStatus.FAILED,
            StopCause.ERROR,
            "internal_error",
            "The run failed with an internal error; staff can see the details in the logs.",
        )
    if heartbeat.lost:  # another worker holds the run now: it is its to finish
        logger.warning("run %s was taken over by another worker; this one stops", run.pk)
        return
    if isinstance(outcome, Final) and give_up and not history_whole(run_id=run.pk):
        logger.error("run %s: its stored history is not whole; it ends failed", run.pk)
        outcome = Stop(RunStatus.FAILED, StopCause.ERROR, "history_incomplete", _INCOMPLETE)
    try:
        if isinstance(outcome, Final):
            finished = run_finish(
                run_id=run.pk,
                status=RunStatus.SUCCEEDED,
                cause=outcome.cause,
                final_message=outcome.text,
                claim=run.claims,
            )
            if not finished and run_held(run_id=run.pk, claim=run.claims):
                raise _ResumeFromDatabase("its stored history is not whole")
        else:
            run_finish(
                run_id=run.pk,
                status=outcome.status,
                cause=outcome.cause,
                error_code=outcome.code,
                error_message=outcome.message,
                claim=run.claims,
            )
    except (OperationalError, InterfaceError) as exc:
        raise _ResumeFromDatabase(f"its database connection was lost ({exc})") from exc


# --- State -----------------------------------------------------------------------------


def _load_state(run: Run, heartbeat: Heartbeat, events: EventLog) -> RunState:
    conversation = run.conversation
    route = providers.route(
        language=conversation.ad.language,
        market=conversation.ad.market,
        requested=conversation.provider or None,
    )
    rows = history_rows(conversation_id=conversation.pk, after_seq=conversation.summary_upto_seq)
    last_seq = rows[-1].seq if rows else conversation.summary_upto_seq
    state = RunState(
        run=run,
        conversation=conversation,
        route=route,
        rows=rows,
        next_seq=last_seq + 1,
        events=events,
        heartbeat=heartbeat,
    )
    for row in rows:
        if row.run_id == run.pk and row.role == Role.TOOL and row.is_error:
            state.failures[row.name] += 1
    if not any(r.run_id == run.pk and r.role == Role.USER for r in rows):
        _append(state, UserMessage(text=run.input_text))
    if not heartbeat.cancel_requested:  # a cancelled run calls no model, not even this
        _summarise_if_needed(state)
    state.messages = _messages_from(state)
    return state


def _messages_from(state: RunState) -> list[Message]:
    messages: list[Message] = []
    if state.conversation.summary:
        messages.append(UserMessage(text=_summary_block(state)))
    messages += [m for m in (row_to_message(r) for r in state.rows) if m is not None]
    return messages


def _summary_block(state: RunState) -> str:
    return (
        "Summary of the earlier conversation (older turns are not repeated here):\n"
        f"{state.conversation.summary}"
    )


def _append(state: RunState, message: Message, *, extra: dict | None = None) -> MessageRow:
    """Add ``message`` to the history as the conversation's next row, written with the
    step's batch."""
    fields: dict = {"text": getattr(message, "text", "")}
    if isinstance(message, AssistantMessage):
        fields.update(
            role=Role.ASSISTANT,
            tool_calls=tool_calls_to_json(message.tool_calls),
            provider_data=message.provider_data,
        )
    elif isinstance(message, ToolResultMessage):
        fields.update(
            role=Role.TOOL,
            text=message.content,
            tool_call_id=message.tool_call_id,
            name=message.name,
            is_error=message.is_error,
        )
    else:
        fields.update(role=Role.USER)
    fields.update(extra or {})
    row = MessageRow(
        conversation=state.conversation,
        run=state.run,
        seq=state.next_seq,
        tokens=message_tokens(message),
        **fields,
    )
    state.batch.insert(row)
    state.next_seq += 1
    state.rows.append(row)
    state.messages.append(message)
    return row


# --- Steps -----------------------------------------------------------------------------


def _drive(state: RunState) -> Final | Stop:
    resume = _resume_point(state)
    if isinstance(resume, Final):
        return resume
    if state.heartbeat.cancel_requested:  # cancelled while no worker held it
        return Stop(RunStatus.CANCELLED, StopCause.CANCELLED)
    if isinstance(resume, RunTools):
        _run_tools(state, resume)
    while True:
        plan, state.planned = state.planned or _plan_next(state), None
        if isinstance(plan, Stop):
            return plan
        step = _model_step(state, final=plan.final)
        if plan.final:
            text = step.text if isinstance(step, Final) else ""
            return Final(text=text, cause=StopCause.MAX_ROUNDS)
        if not isinstance(step, RunTools):
            return step
        if state.heartbeat.lost:  # taken over while it waited on the model
            return _TAKEN_OVER
        _run_tools(state, step)


def _plan_next(state: RunState) -> CallModel | Stop:
    """Whether the run calls the model again. A model call's ``model_call.started`` event
    is staged with the writes in progress, so it costs no statement of its own."""
    if state.heartbeat.lost:  # _run_agent leaves the run to the worker that took it
        return _TAKEN_OVER
    if state.heartbeat.cancel_requested:
        return Stop(RunStatus.CANCELLED, StopCause.CANCELLED)
    if time.monotonic() >= state.deadline:
        return Stop(RunStatus.FAILED, StopCause.ERROR, "timeout", _TOO_LONG)
    spent = state.run.prompt_tokens + state.run.completion_tokens
    if spent >= settings.ADSTUDIO_RUN_TOKEN_BUDGET:
        return Stop(
            RunStatus.FAILED,
            StopCause.TOKEN_BUDGET,
            "token_budget",
            f"The run stopped after {spent} tokens (budget {settings.ADSTUDIO_RUN_TOKEN_BUDGET}).",
        )
    round_no = state.run.rounds + 1
    state.batch.insert(
        *state.events.numbered((RunEventType.MODEL_CALL_STARTED, {"round": round_no}))
    )
    return CallModel(final=state.run.rounds >= settings.ADSTUDIO_MAX_ROUNDS)


def _resume_point(state: RunState) -> RunTools | Final | None:
    """Where a resumed run picks up: unanswered calls of its last assistant message, or
    its final answer if it was written before the worker died."""
    own = [r for r in state.rows if r.run_id == state.run.pk]
    assistant = next((r for r in reversed(own) if r.role == Role.ASSISTANT), None)
    if assistant is None:
        return None
    answered = {r.tool_call_id for r in own if r.role == Role.TOOL and r.seq > assistant.seq}
    if (assistant.provider_data or {}).get("stopped_by"):
        return None  # a reply cut short is no answer: ask the model again
    if not assistant.tool_calls:
        return Final(text=assistant.text) if assistant is own[-1] else None
    message = row_to_message(assistant)
    pending = tuple(c for c in message.tool_calls if c.id not in answered)
    return RunTools(calls=pending, message_seq=assistant.seq) if pending else None


def _model_step(state: RunState, *, final: bool = False) -> RunTools | Final | Stop:
    run = state.run
    round_no = run.rounds + 1
    messages = make_valid(state.messages)
    # Streaming lets text reach the client as it is written; adapters whose provider
    # cannot stream with tools (Qwen) fall back to one response on their own.
    options = GenerateOptions(tool_choice="none" if final else None, stream=True)
    if final:
        messages.append(UserMessage(text=FINAL_ANSWER_NUDGE))
    request = GenerateRequest(
        model="",  # each provider binding sets its own model
        system=system_prompt(),
        messages=tuple(messages),
        tools=tool_specs(),
        options=options,
    )
    state.batch.write()  # the model_call.started event, with what came before it
    text_stream = _TextEvents(state.events)
    release_connection()  # a worker with many runs waiting needs few connections

    def record_attempt(attempt: providers.Attempt) -> None:
        text_stream.attempt_ended(failed=attempt.error is not None)
        row = _model_call(run, round_no, attempt)
        if attempt.error is None:
            state.batch.insert(row)  # written with the reply
            return
        # Now: a retry or another provider may follow, and a worker that dies before the
        # step is written must not take the record of a paid request with it.
        try:
            insert_rows(row)
        except DatabaseError:  # the run's own error is the one to report
            logger.warning("could not record a failed model call of run %s", run.pk)
        release_connection()

    with step_gate().released():
        response = providers.generate(
            request, route=state.route, on_attempt=record_attempt, on_text=text_stream.add
        )
    text_stream.flush()
    message = storable_reply(response.message)
    # Calls of a reply cut off at its token limit, or stopped by the content filter, are
    # not run, now or when the run is requeued: they are kept for staff only.
    truncated = response.stop_reason == StopReason.MAX_TOKENS and message.tool_calls
    filtered = response.stop_reason == StopReason.CONTENT_FILTER and message.tool_calls
    if final or truncated or filtered:
        # No tool runs now: keep the calls for staff, out of the replayed history.
        extra = (
            {
                "provider_data": {
                    **message.provider_data,
                    "dropped_tool_calls": tool_calls_to_json(message.tool_calls),
                    # cut short: no answer, so a requeued run asks the model again
                    **({"stopped_by": response.stop_reason.value} if not final else {}),
                }
            }
            if message.tool_calls
            else {}
        )
        message = AssistantMessage(text=message.text, provider_data=message.provider_data)
    else:
        extra = {}
    # The model calls, the message, the run's counters and the events: one write.
    row = _append(state, message, extra=extra)
    run.rounds += 1
    run.provider, run.model = response.provider, response.model
    _count_usage(state, response)
    events = []
    if message.text and not text_stream.sent_any:
        events.append((RunEventType.TEXT, {"text": message.text}))
    for call in message.tool_calls:
        events.append(
            (
                RunEventType.TOOL_CALL_STARTED,
                {"toolCallId": call.id, "name": call.name, "arguments": call.arguments},
            )
        )
    state.batch.insert(*state.events.numbered(*events))
    state.batch.write()
    if truncated:
        return Stop(
            RunStatus.FAILED,
            StopCause.ERROR,
            "max_tokens",
            "The model's reply was cut off at its token limit in the middle of a tool call; "
            "the call was not executed.",
        )
    if response.stop_reason == StopReason.CONTENT_FILTER:
        return Stop(
            RunStatus.FAILED,
            StopCause.ERROR,
            "content_filtered",
            "The provider's content filter stopped the reply.",
        )
    if message.tool_calls:
        return RunTools(calls=message.tool_calls, message_seq=row.seq)
    return Final(text=message.text)


def _run_tools(state: RunState, step: RunTools) -> None:
    for index, call in enumerate(step.calls):
        is_last = index == len(step.calls) - 1
        # A draft is keyed by the assistant message and the call id: some providers
        # reuse call ids across rounds, a message sequence number never repeats.
        ctx = ToolContext(
            ad=state.ad,
            run_id=state.run.pk,
            tool_call_id=f"{step.message_seq}:{call.id}"[:128],
            batch=state.batch,
        )

        def record(outcome: ToolOutcome, call: ToolCall = call, is_last: bool = is_last) -> None:
            _append(
                state,
                ToolResultMessage(
                    tool_call_id=call.id,
                    name=call.name,
                    content=outcome.text,
                    is_error=outcome.is_error,
                ),
            )
            events = [
                (
                    RunEventType.TOOL_CALL_FINISHED,
                    {
                        "toolCallId": call.id,
                        "name": call.name,
                        "isError": outcome.is_error,
                        "result": outcome.content,
                    },
                )
            ]
            if not outcome.is_error and "versionId" in outcome.content:
                events.append(
                    (
                        RunEventType.DRAFT_CREATED,
                        {
                            "kind": outcome.content["kind"],
                            "version": outcome.content["versionId"],
                            "toolCallId": call.id,
                        },
                    )
                )
            state.batch.insert(*state.events.numbered(*events))
            if is_last:  # decided now, so its event is written with this result
                state.planned = _plan_next(state)
            state.batch.write()

        if state.failures[call.name] >= settings.ADSTUDIO_MAX_TOOL_FAILURES:
            outcome = ToolOutcome(
                {
                    "error": f"{call.name} failed {state.failures[call.name]} times in "
                    "this turn and is not run again.",
                    "suggestion": "Stop calling it; tell the user what went wrong.",
                },
                is_error=True,
            )
            record(outcome)
        else:
            outcome = execute_tool_call(call, ctx, record=record)
        if outcome.is_error:
            state.failures[call.name] += 1


# --- Model call helpers ----------------------------------------------------------------


def _count_usage(state: RunState, response: ModelResponse) -> None:
    """Add what a model call cost to the run's counters, written with the step. This
    worker is the run's only writer of its counters: they are counted here and written as
    values. Adapters estimate the usage (``exact=False``) when the provider sent none."""
    run, usage = state.run, response.usage
    run.prompt_tokens += usage.prompt_tokens
    run.completion_tokens += usage.completion_tokens
    run.cached_tokens += usage.cached_prompt_tokens
    run.cost += usage_cost(model=response.model, usage=usage)
    run.cost_exact = run.cost_exact and usage.exact
    state.batch.update(Run, run.pk, **{name: getattr(run, name) for name in _RUN_COUNTERS})


class _TextEvents:
    """Turns streamed text deltas into a few progress events, not one per token.

    A failed attempt's text is not the reply: what is still buffered is dropped, and if
    some was sent, a ``text`` event with ``reset`` tells clients to drop it too."""

    def __init__(self, events: EventLog) -> None:
        self.events = events
        self.buffer: list[str] = []
        self.last = time.monotonic()
        self.sent_any = False
        self.sent_this_attempt = False

    def attempt_ended(self, *, failed: bool) -> None:
        if failed:
            self.buffer.clear()
            if self.sent_this_attempt:
                self.events.append((RunEventType.TEXT, {"reset": True}))
                self.sent_any = False
        self.sent_this_attempt = False

    def add(self, delta: str) -> None:
        self.buffer.append(without_nul(delta))
        if time.monotonic() - self.last >= TEXT_EVENT_INTERVAL:
            self.flush()

    def flush(self) -> None:
        if self.buffer:
            self.events.append((RunEventType.TEXT, {"delta": "".join(self.buffer)}))
            self.buffer.clear()
            self.sent_any = self.sent_this_attempt = True
        self.last = time.monotonic()


INTERRUPTED = "interrupted"


def _record_interrupted_call(state: RunState) -> None:
    """Record the model call a resumed run's worker was waiting on when it died or lost
    the database: the request was sent (its round's ``model_call.started`` is written
    before it) and may be paid for, but its round never ended and no row says so. Its
    prompt tokens are estimated from the request this run sends again now; the stats
    then count every provider request."""
    run = state.run
    last = (
        RunEvent.objects.filter(run=run, type=RunEventType.MODEL_CALL_STARTED)
        .order_by("-seq")
        .values_list("data", "created_at")
        .first()
    )
    if last is None or last[0].get("round", 0) <= run.rounds:
        return  # the last call made came back and was stored
    round_no, started_at = last[0]["round"], last[1]
    calls = ModelCall.objects.filter(run=run, round=round_no)
    if calls.filter(error_code=INTERRUPTED, created_at__gte=started_at).exists():
        return  # recorded by an earlier resume
    binding = state.route[0]
    usage = Usage(prompt_tokens=_prompt_tokens(state), exact=False)
    run.prompt_tokens += usage.prompt_tokens
    run.cost += usage_cost(model=binding.model, usage=usage)
    run.cost_exact = False
    writes = Batch()
    writes.insert(
        ModelCall(
            run=run,
            round=round_no,
            attempt=calls.count() + 1,
            provider=binding.name,
            model=binding.model,
            prompt_tokens=usage.prompt_tokens,
            usage_exact=False,
            finish_reason=StopReason.ERROR,
            error_code=INTERRUPTED,
            error="No reply was received: the worker stopped while it waited for the model "
            "(the prompt tokens are estimated).",
        )
    )
    writes.update(Run, run.pk, prompt_tokens=run.prompt_tokens, cost=run.cost, cost_exact=False)
    writes.write()


def _prompt_tokens(state: RunState) -> int:
    """An estimate of one request's prompt: system prompt, tools and history."""
    tools = json.dumps([spec.parameters for spec in tool_specs()], ensure_ascii=False)
    return (
        count_tokens(system_prompt())
        + count_tokens(tools)
        + sum(message_tokens(message) for message in state.messages)
    )


def _model_call(run: Run, round_no: int, attempt: providers.Attempt) -> ModelCall:
    response: ModelResponse | None = attempt.response
    usage = response.usage if response else Usage()
    error = attempt.error
    return ModelCall(
        run=run,
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


def _summarise_if_needed(state: RunState) -> None:
    """Fold the oldest turns into the conversation's summary when the history would not
    fit the context budget; the recent whole turns are sent as they are."""
    budget = settings.ADSTUDIO_CONTEXT_BUDGET_TOKENS
    turns = split_turns(state.rows)
    if sum(row.tokens for row in state.rows) <= budget:
        return
    # Keep half the budget of recent turns, so the next summary is many turns away and
    # the requests in between share one cacheable prefix.
    older, recent = recent_turns_within(turns, budget=budget // 2)
    if not older:
        return
    transcript = "\n".join(
        f"{row.role}: {row.text}"
        + (f" [calls: {json.dumps(row.tool_calls, ensure_ascii=False)}]" if row.tool_calls else "")
        for turn in older
        for row in turn
    )
    previous = (
        f"Summary so far:\n{state.conversation.summary}\n\n" if state.conversation.summary else ""
    )
    request = GenerateRequest(
        model="",
        system=SUMMARY_SYSTEM_PROMPT,
        messages=(UserMessage(text=f"{previous}Conversation to add:\n{transcript}"),),
    )
    round_no = state.run.rounds + 1
    try:
        with step_gate().released():
            response = providers.generate(
                request,
                route=state.route,
                on_attempt=lambda attempt: state.batch.insert(
                    _model_call(state.run, round_no, attempt)
                ),
            )
    except ProviderError:
        # The older turns stay in this request, over the budget, rather than be dropped
        # unsummarised for good; the next turn tries the summary again.
        logger.warning(
            "summary failed for conversation %s; this request carries the whole history",
            state.conversation.pk,
        )
        return
    summary = response.message.text.strip()
    _count_usage(state, response)
    upto = older[-1][-1].seq
    state.batch.update(
        Conversation,
        state.conversation.pk,
        summary=summary,
        summary_upto_seq=upto,
    )
    state.conversation.summary = summary
    state.conversation.summary_upto_seq = upto
    state.rows = [row for turn in recent for row in turn]
