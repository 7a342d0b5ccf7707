"""The agent loop: one run answers one user turn through model calls and tool calls.

Each step returns what happens next (``RunTools``, ``Answer`` or ``Stop``) and is stored
as it happens (``conversations.run_log``), so a run that dies, or loses its database,
is resumed from its last stored step and no tool call is executed twice.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import Counter
from contextlib import suppress
from dataclasses import dataclass, field

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError

import providers
from adstudio import log_context, observability
from adstudio.db import WriteConflict, release_connection
from adstudio.storable import without_nul
from adstudio.tools import ToolContext
from conversations import run_log
from conversations.heartbeat import Heartbeat
from conversations.history import pair_calls_and_results
from conversations.message_rows import (
    HistoryRow,
    draft_call_key,
    history_rows,
    row_to_message,
    storable_reply,
    tool_calls_to_json,
)
from conversations.models import Conversation, Role, Run, RunStatus, StopCause
from conversations.models import Message as MessageRow
from conversations.prompts import FINAL_ANSWER_NUDGE, summary_block, system_prompt
from conversations.run_log import ClaimLost, RunLog, StepCancelled, TextEvents
from conversations.runs.claim import Claim, run_claim, run_claim_again
from conversations.runs.finish import history_whole, run_finish, run_held
from conversations.step_gate import provider_wait, step_gate
from conversations.summary import summarise_if_needed
from conversations.tokens import message_tokens
from conversations.tools import ToolOutcome, execute_tool_call, tool_specs
from drafts.services import LatestVersions
from providers import (
    AssistantMessage,
    GenerateOptions,
    GenerateRequest,
    Message,
    ProviderError,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from providers.base import Interrupted
from providers.interrupt import interruptible

logger = logging.getLogger(__name__)


# --- What happens next -----------------------------------------------------------------


@dataclass(frozen=True)
class RunTools:
    calls: tuple[ToolCall, ...]
    message_seq: int


@dataclass(frozen=True)
class Answer:
    """The run's reply to the user: it ends the run successfully."""

    text: str
    cause: StopCause = StopCause.FINAL_ANSWER
    # Its message is the run's last staged row, not stored yet: the finish writes it.
    staged: bool = False


@dataclass(frozen=True)
class Stop:
    status: RunStatus
    cause: StopCause
    code: str = ""
    message: str = ""


@dataclass(frozen=True)
class CallModel:
    last_round: bool  # the round limit is reached: one last call, without tools


@dataclass
class RunState:
    """Everything one run works with; built once, then appended to as the run goes."""

    log: RunLog
    route: list[providers.ProviderBinding]
    heartbeat: Heartbeat
    failures: Counter = field(default_factory=Counter)
    # The ad's latest draft versions, when the claim read them (drafts.services).
    draft_versions: LatestVersions | None = None
    # What the model is sent: the summary, the history as loaded, and this run's messages.
    messages: list[Message] = field(default_factory=list)
    # What comes after the step being written, when it was decided with its writes.
    planned: CallModel | Stop | None = None
    # The planned model call's model_call.started is written (by the run's claim): what
    # is staged before the call is written with the call's step, not before it.
    call_announced: bool = False
    # time.monotonic() after which no new step starts: the task's soft time limit, which
    # Celery's threads pool does not enforce itself.
    deadline: float = float("inf")

    @property
    def run(self) -> Run:
        return self.log.run

    @property
    def conversation(self) -> Conversation:
        return self.log.conversation

    def append(self, message: Message, *, extra: dict | None = None):
        """Add ``message`` to the history, stored with the step's writes."""
        self.messages.append(message)
        return self.log.append(message, extra=extra)


_TOO_LONG = "The run took too long (ADSTUDIO_TASK_SOFT_TIME_LIMIT) and was stopped."
# Never written: _run_agent leaves a run taken over to the worker that holds it now.
_TAKEN_OVER = Stop(RunStatus.FAILED, StopCause.ERROR, "taken_over", "Taken over.")
# Resumes from the database per task; past that a history that will not come out whole
# ends the run failed (a database that stays away leaves it to the recovery sweep).
_MAX_RESUMES = 5
_INCOMPLETE = "The run's stored history stayed incomplete; staff can see the details in the logs."


class _ResumeFromDatabase(Exception):
    """What the worker holds of the run in memory can no longer be trusted: it takes the
    run again and resumes from what the database holds."""


# --- A run, from its claim to its finish ------------------------------------------------


@observability.traced_run
def run_agent(run_id: uuid.UUID | str) -> None:
    """Execute (or resume) the run; safe to call twice: a second call finds nothing to do.

    The run computes only while it holds a slot of the process's step gate, and gives the
    slot back while it waits on its provider."""
    with step_gate().held():
        _run_agent(uuid.UUID(str(run_id)))


def _run_agent(run_id: uuid.UUID) -> None:
    claim = run_claim(run_id=run_id)
    resumes = 0
    while claim is not None:
        try:
            _execute(claim, give_up=resumes >= _MAX_RESUMES)
            return
        except _ResumeFromDatabase as reason:
            resumes += 1
            logger.warning("run %s: %s; resuming it from what is stored", run_id, reason)
            claim = run_claim_again(run_id=run_id, holder=claim.run.claims)


def _execute(claim: Claim, *, give_up: bool) -> None:
    """Drive the claimed run to its end and finish it. Raises ``_ResumeFromDatabase``
    when the database connection is lost (a restart, a terminated backend): a transient
    fault, after which the step that failed may or may not be stored. With ``give_up``,
    a history that is not whole ends the run failed instead."""
    run = claim.run
    outcome: Answer | Stop
    heartbeat = Heartbeat(
        run.pk,
        interval=settings.ADSTUDIO_HEARTBEAT_INTERVAL,
        cancelled=claim.cancel_requested,
        claim=run.claims,
    )
    deadline = time.monotonic() + settings.CELERY_TASK_SOFT_TIME_LIMIT
    try:
        with heartbeat:
            state = _load_state(claim, heartbeat)
            observability.run_started(run, provider=state.route[0].name, resumed=claim.resumed)
            if claim.resumed:
                state.log.interrupted_call(route=state.route, messages=state.messages)
            state.deadline = deadline
            outcome = _drive(state)
    except ClaimLost:  # a write found the run claimed by another worker: it is its now
        logger.warning("run %s was taken over by another worker; this one stops", run.pk)
        return
    except (OperationalError, InterfaceError) as exc:
        raise _ResumeFromDatabase(f"its database connection was lost ({exc})") from exc
    except WriteConflict as exc:  # e.g. a draft version another run took: nothing written
        raise _ResumeFromDatabase(f"a concurrent writer took a row it wrote ({exc})") from exc
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
    # A new answer is staged, not written: the finish writes it in its own statement.
    answer = state.log if isinstance(outcome, Answer) and outcome.staged else None
    try:
        if answer is not None and give_up:  # the history is checked as stored, below
            answer.write()
            answer = None
        if isinstance(outcome, Answer) and give_up and not history_whole(run_id=run.pk):
            logger.error("run %s: its stored history is not whole; it ends failed", run.pk)
            outcome = Stop(RunStatus.FAILED, StopCause.ERROR, "history_incomplete", _INCOMPLETE)
        finished = run_finish(
            run_id=run.pk, claim=run.claims, answer=answer, **_finished_as(outcome)
        )
        if (
            isinstance(outcome, Answer)
            and not finished
            and run_held(run_id=run.pk, claim=run.claims)
        ):
            raise _ResumeFromDatabase("its stored history is not whole")
    except ClaimLost:
        logger.warning("run %s was taken over by another worker; this one stops", run.pk)
    except (OperationalError, InterfaceError) as exc:
        raise _ResumeFromDatabase(f"its database connection was lost ({exc})") from exc


def _finished_as(outcome: Answer | Stop) -> dict:
    """``run_finish``'s account of how the run ended."""
    if isinstance(outcome, Answer):
        return {
            "status": RunStatus.SUCCEEDED,
            "cause": outcome.cause,
            "final_message": outcome.text,
        }
    return {
        "status": outcome.status,
        "cause": outcome.cause,
        "error_code": outcome.code,
        "error_message": outcome.message,
    }


def _load_state(claim: Claim, heartbeat: Heartbeat) -> RunState:
    """The run's state, with the history and draft versions its claim read, if it did."""
    run = claim.run
    conversation = run.conversation
    log_context.bind(conversation_id=conversation.pk, ad_id=conversation.ad_id)
    route = providers.route(
        language=conversation.ad.language,
        market=conversation.ad.market,
        requested=conversation.provider or None,
    )
    rows = claim.history
    if rows is None:
        rows = history_rows(
            conversation_id=conversation.pk, after_seq=conversation.summary_upto_seq
        )
    if claim.user_message is not None:  # written by the claim, after the history it read
        message_id, seq = claim.user_message
        rows.append(_claimed_user_message(run, message_id=message_id, seq=seq))
    last_seq = rows[-1].seq if rows else conversation.summary_upto_seq
    log = RunLog(
        run=run, conversation=conversation, rows=rows, next_seq=last_seq + 1, events=claim.events
    )
    state = RunState(log=log, route=route, heartbeat=heartbeat, draft_versions=claim.draft_versions)
    for n, row in enumerate(rows):
        if row.run_id == run.pk and row.role == Role.TOOL and row.is_error:
            state.failures[row.name] += 1
        if row.run_id == run.pk and row.role == Role.USER and not row.tokens:
            # The claim writes the user message before its token count, which is written
            # with the run's next step (or now, if its worker stopped before that).
            rows[n] = row._replace(tokens=message_tokens(UserMessage(text=row.text)))
            log.batch.update(MessageRow, row.id, tokens=rows[n].tokens)
    if claim.call_announced:  # the claim wrote round 1's model_call.started
        state.planned = CallModel(last_round=run.rounds >= settings.ADSTUDIO_MAX_ROUNDS)
        state.call_announced = True
    if not any(r.run_id == run.pk and r.role == Role.USER for r in rows):
        log.append(UserMessage(text=run.input_text))
    if not heartbeat.cancel_requested:  # a cancelled run calls no model, not even this
        summarise_if_needed(log, route=route)
    state.messages = _messages_from(state)
    return state


def _claimed_user_message(run: Run, *, message_id: int, seq: int) -> HistoryRow:
    """The run's user message as its claim wrote it (``runs.claim._claim_queued_sql``)."""
    return HistoryRow(
        seq=seq,
        role=Role.USER,
        text=run.input_text,
        tool_calls=[],
        tool_call_id="",
        name="",
        is_error=False,
        provider_data={},
        tokens=0,
        run_id=run.pk,
        id=message_id,
    )


def _messages_from(state: RunState) -> list[Message]:
    summary = state.conversation.summary
    messages: list[Message] = [UserMessage(text=summary_block(summary))] if summary else []
    messages += [m for m in (row_to_message(r) for r in state.log.rows) if m is not None]
    return messages


# --- Steps -----------------------------------------------------------------------------


def _drive(state: RunState) -> Answer | Stop:
    resume = _resume_point(state)
    if isinstance(resume, Answer):
        return resume
    if state.heartbeat.cancel_requested:  # cancelled while no worker held it
        return Stop(RunStatus.CANCELLED, StopCause.CANCELLED)
    if isinstance(resume, RunTools):
        _run_tools(state, resume)
    while True:
        plan, state.planned = state.planned or _plan_next(state), None
        if isinstance(plan, Stop):
            return plan
        step = _model_step(state, last_round=plan.last_round)
        if plan.last_round:
            text = step.text if isinstance(step, Answer) else ""
            staged = isinstance(step, Answer) and step.staged
            return Answer(text=text, cause=StopCause.MAX_ROUNDS, staged=staged)
        if not isinstance(step, RunTools):
            return step
        if state.heartbeat.lost:  # taken over while it waited on the model
            return _TAKEN_OVER
        _run_tools(state, step)


def _interrupted(state: RunState, text_stream: TextEvents, text: str) -> Stop:
    """The end of a run cancelled during a model call: the reply's text so far is kept,
    in the stream and in the history, marked as interrupted; no tool of it runs."""
    for event in text_stream.remaining():
        state.log.events.append(event)
    if text:
        state.append(
            AssistantMessage(text=without_nul(text)),
            extra={"provider_data": {"interrupted": True}},
        )
        state.log.write()
    return Stop(RunStatus.CANCELLED, StopCause.CANCELLED)


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
    state.log.event(run_log.model_call_started(round_no=state.run.rounds + 1))
    return CallModel(last_round=state.run.rounds >= settings.ADSTUDIO_MAX_ROUNDS)


def _resume_point(state: RunState) -> RunTools | Answer | None:
    """Where a resumed run picks up: unanswered calls of its last assistant message, or
    its answer if it was written before the worker died."""
    own = [r for r in state.log.rows if r.run_id == state.run.pk]
    assistant = next((r for r in reversed(own) if r.role == Role.ASSISTANT), None)
    if assistant is None:
        return None
    answered = {r.tool_call_id for r in own if r.role == Role.TOOL and r.seq > assistant.seq}
    if (assistant.provider_data or {}).get("stopped_by"):
        return None  # a reply cut short is no answer: ask the model again
    if not assistant.tool_calls:
        return Answer(text=assistant.text) if assistant is own[-1] else None
    message = row_to_message(assistant)
    pending = tuple(c for c in message.tool_calls if c.id not in answered)
    return RunTools(calls=pending, message_seq=assistant.seq) if pending else None


def _model_step(state: RunState, *, last_round: bool = False) -> RunTools | Answer | Stop:
    run, log = state.run, state.log
    round_no = run.rounds + 1
    messages = pair_calls_and_results(state.messages)
    # Streaming lets text reach the client as it is written; adapters whose provider
    # cannot stream with tools (Qwen) fall back to one response on their own.
    options = GenerateOptions(tool_choice="none" if last_round else None, stream=True)
    if last_round:
        messages.append(UserMessage(text=FINAL_ANSWER_NUDGE))
    request = GenerateRequest(
        model="",  # each provider binding sets its own model
        system=system_prompt(),
        messages=tuple(messages),
        tools=tool_specs(),
        options=options,
    )
    # The model_call.started event, with what came before it; when the claim wrote the
    # event, what is staged waits for the step, unless the step would update the same
    # run row (a summary's usage).
    if not state.call_announced or (Run, run.pk) in log.batch.updated_rows:
        log.write()
    state.call_announced = False
    text_stream = TextEvents(log.events)
    said: list[str] = []  # this attempt's text: what a cancelled call leaves

    def on_text(delta: str) -> None:
        said.append(delta)
        text_stream.add(delta)

    def record_attempt(attempt: providers.Attempt) -> None:
        # An interrupted attempt's text stays: the person saw it as they pressed Stop.
        failed = attempt.error is not None and not isinstance(attempt.error, Interrupted)
        text_stream.attempt_ended(failed=failed)
        if failed:
            said.clear()
        try:
            log.model_call(round_no, attempt)
        except DatabaseError:  # the run's own error is the one to report
            logger.warning("could not record a failed model call of run %s", run.pk)
        if attempt.error is not None:
            release_connection()  # the retry's wait needs no connection

    try:
        with provider_wait(), interruptible(state.heartbeat.interrupt):
            response = providers.generate(
                request,
                route=state.route,
                on_attempt=record_attempt,
                on_text=on_text,
                watch=observability.model_call,
            )
    except Interrupted:  # cancelled while the model was answering
        return _interrupted(state, text_stream, "".join(said))
    message = storable_reply(response.message)
    # Calls of a reply cut off at its token limit, or stopped by the content filter, are
    # not run, now or when the run is requeued: they are kept for staff only.
    truncated = response.stop_reason == StopReason.MAX_TOKENS and message.tool_calls
    filtered = response.stop_reason == StopReason.CONTENT_FILTER and message.tool_calls
    extra = {}
    if last_round or truncated or filtered:
        if message.tool_calls:  # no tool runs now: kept for staff, out of the history
            extra = {
                "provider_data": {
                    **message.provider_data,
                    "dropped_tool_calls": tool_calls_to_json(message.tool_calls),
                    # cut short: no answer, so a requeued run asks the model again
                    **({"stopped_by": response.stop_reason.value} if not last_round else {}),
                }
            }
        message = AssistantMessage(text=message.text, provider_data=message.provider_data)
    # The model calls, the message, the run's counters and the events: one write.
    row = state.append(message, extra=extra)
    run.rounds += 1
    run.provider, run.model = response.provider, response.model
    log.count_usage(response)
    events = text_stream.remaining()
    if message.text and not text_stream.sent_any:
        events.append(run_log.text_whole(message.text))
    events += [run_log.tool_call_started(call) for call in message.tool_calls]
    log.event(*events)
    if message.tool_calls:
        # Stored with its first call's result (_run_tools), in one write: a worker that
        # stops in between has stored nothing of the step and asks the model again, as
        # one that stops while it waits on the model does.
        return RunTools(calls=message.tool_calls, message_seq=row.seq)
    if not (truncated or filtered):
        return Answer(text=message.text, staged=True)  # written by the finish (_execute)
    log.write()
    if truncated:
        return Stop(
            RunStatus.FAILED,
            StopCause.ERROR,
            "max_tokens",
            "The model's reply was cut off at its token limit in the middle of a tool call; "
            "the call was not executed.",
        )
    return Stop(
        RunStatus.FAILED,
        StopCause.ERROR,
        "content_filtered",
        "The provider's content filter stopped the reply.",
    )


def _run_tools(state: RunState, step: RunTools) -> None:
    """Each call of the reply in turn. A tool stages its rows in the run's batch and returns
    its outcome; the loop writes them with the call's result and events, one statement."""
    for index, call in enumerate(step.calls):
        mark = state.log.batch.mark()
        try:
            outcome = _call_tool(state, step, call)
            _record_tool_result(state, call, outcome, is_last=index == len(step.calls) - 1)
        except WriteConflict:
            # The call's rows are discarded; the reply that made it is kept, so the
            # resumed run calls the tool again without asking the model again.
            state.log.batch.rollback_to(mark)
            if state.draft_versions is not None:
                state.draft_versions.forget()
            state.log.write()
            raise
        if state.log.lost:
            raise ClaimLost(f"run {state.run.pk} was claimed by another worker")
        if state.log.cancelled:  # no later call runs, no model is asked again
            state.planned = Stop(RunStatus.CANCELLED, StopCause.CANCELLED)
            return
        if outcome.is_error:
            state.failures[call.name] += 1


def _call_tool(state: RunState, step: RunTools, call: ToolCall) -> ToolOutcome:
    """The call's outcome; a tool that failed too often in this turn is not run again."""
    if state.failures[call.name] >= settings.ADSTUDIO_MAX_TOOL_FAILURES:
        return ToolOutcome(
            {
                "error": f"{call.name} failed {state.failures[call.name]} times in "
                "this turn and is not run again.",
                "suggestion": "Stop calling it; tell the user what went wrong.",
            },
            is_error=True,
        )
    ctx = ToolContext(
        ad=state.conversation.ad,
        run_id=state.run.pk,
        tool_call_id=draft_call_key(step.message_seq, call.id),
        batch=state.log.batch,
        draft_versions=state.draft_versions,
    )
    return execute_tool_call(call, ctx)


def _record_tool_result(
    state: RunState, call: ToolCall, outcome: ToolOutcome, *, is_last: bool
) -> None:
    """Write the call's result, its events and the rows its tool staged, together."""
    state.append(
        ToolResultMessage(
            tool_call_id=call.id, name=call.name, content=outcome.text, is_error=outcome.is_error
        )
    )
    events = [run_log.tool_call_finished(call, outcome)]
    if outcome.draft is not None:
        events.append(run_log.draft_created(call, outcome.draft))
    state.log.event(*events)
    if is_last:  # decided now, so its event is written with this result
        state.planned = _plan_next(state)
    # A lost claim (nothing of the call written) is not raised here but after the call
    # (state.log.lost), as after a draft refused for the run's cancel (state.log.cancelled).
    with suppress(ClaimLost, StepCancelled):
        state.log.write()
