"""One step of a run: a model call and its reply, or the tool calls of a reply, each
written as it happens (``conversations.record.log``), and the decision of what comes next.
"""

from __future__ import annotations

import logging
import time
from contextlib import suppress

from django.conf import settings
from django.db import DatabaseError

import providers
from adstudio import observability
from adstudio.db.batch import BatchMark, WriteConflict
from adstudio.db.connection import release_connection
from adstudio.db.storable import without_nul
from adstudio.tools import ToolContext
from conversations.agent.history import pair_calls_and_results
from conversations.agent.prompts import FINAL_ANSWER_NUDGE, system_prompt
from conversations.agent.state import Answer, CallModel, RunState, RunTools, Stop
from conversations.agent.summary import standing_prompt_tokens
from conversations.agent.tools import ToolOutcome, execute_tool_call, tool_specs, writes
from conversations.models import Run, RunStatus, StopCause
from conversations.record import log as run_log
from conversations.record.log import ClaimLost, StepCancelled, TextEvents
from conversations.record.messages import draft_call_key, storable_reply, tool_calls_to_json
from conversations.record.tokens import message_tokens
from conversations.runs.step_gate import provider_wait
from providers import (
    AssistantMessage,
    GenerateOptions,
    GenerateRequest,
    Message,
    StopReason,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from providers.base import Interrupted
from providers.interrupt import interruptible

logger = logging.getLogger(__name__)

TOO_LONG = "The run took too long (ADSTUDIO_TASK_SOFT_TIME_LIMIT) and was stopped."
# Never written: _run_agent leaves a run taken over to the worker that holds it now.
TAKEN_OVER = Stop(RunStatus.FAILED, StopCause.ERROR, "taken_over", "Taken over.")


def request_tokens(messages: list[Message]) -> int:
    """An estimate of one request's prompt: system prompt, tools and history (the prompt
    of a request whose reply never came, which its ``ModelCall`` row still counts)."""
    return standing_prompt_tokens() + sum(message_tokens(message) for message in messages)


def plan_next(state: RunState) -> CallModel | Stop:
    """Whether the run calls the model again. A model call's ``model_call.started`` event
    is staged with the writes in progress, so it costs no statement of its own."""
    if state.heartbeat.lost:  # _run_agent leaves the run to the worker that took it
        return TAKEN_OVER
    if state.heartbeat.cancel_requested:
        return Stop(RunStatus.CANCELLED, StopCause.CANCELLED)
    if time.monotonic() >= state.deadline:
        return Stop(RunStatus.FAILED, StopCause.ERROR, "timeout", TOO_LONG)
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


def model_step(state: RunState, *, last_round: bool = False) -> RunTools | Answer | Stop:
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
            if isinstance(attempt.error, Interrupted):
                log.cancelled_call(
                    round_no, attempt, prompt_tokens=request_tokens(request.messages)
                )
            else:
                log.model_call(round_no, attempt)
        except (DatabaseError, ClaimLost):  # the run's own end is the one to report
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
        # Stored with its calls' results (run_tools), in one write: a worker that stops
        # in between has stored nothing of the step and asks the model again, as one
        # that stops while it waits on the model does.
        return RunTools(calls=message.tool_calls, message_seq=row.seq)
    if not (truncated or filtered):
        return Answer(text=message.text, staged=True)  # written by the finish (loop._execute)
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


def run_tools(state: RunState, step: RunTools) -> None:
    """Each call of the reply in turn. A tool stages its rows in the run's batch and returns
    its outcome; the step's results, their rows and events are written together when its
    last call has run: one statement, one durable commit for the step, however many calls
    the reply made. A worker that stops before then has stored nothing of the step, and the
    resumed run asks the model again, as after a stop while it waited on the model. A tool
    that only reads (``get_current_state``) after one that wrote gets the step's writes so
    far written first, so it reads them."""
    log = state.log
    mark = log.batch.mark()
    for index, call in enumerate(step.calls):
        if index and not writes(call):
            _write_step(state, mark)
            if state.log.cancelled:
                return
            mark = log.batch.mark()
        try:
            outcome = _call_tool(state, step, call)
        except WriteConflict:
            _keep_only_the_reply(state, mark)
            raise
        _stage_tool_result(state, call, outcome, is_last=index == len(step.calls) - 1)
        if outcome.is_error:
            state.failures[call.name] += 1
    _write_step(state, mark)


def _write_step(state: RunState, mark: BatchMark) -> None:
    """Write what the step staged since ``mark``."""
    try:
        # A lost claim or a draft refused for the run's cancel: nothing of the step was
        # written; raised or planned below.
        with suppress(ClaimLost, StepCancelled):
            state.log.write()
    except WriteConflict:
        _keep_only_the_reply(state, mark)
        raise
    if state.log.lost:
        raise ClaimLost(f"run {state.run.pk} was claimed by another worker")
    if state.log.cancelled:  # no later call runs, no model is asked again
        state.planned = Stop(RunStatus.CANCELLED, StopCause.CANCELLED)


def _keep_only_the_reply(state: RunState, mark: BatchMark) -> None:
    """After a ``WriteConflict`` (a tool read before a concurrent writer committed): the
    calls' rows and results staged since ``mark`` are discarded and the reply that made
    them is written, so the resumed run calls the tools again without asking the model."""
    state.log.batch.rollback_to(mark)
    if state.draft_versions is not None:
        state.draft_versions.forget()
    state.log.write()


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


def _stage_tool_result(
    state: RunState, call: ToolCall, outcome: ToolOutcome, *, is_last: bool
) -> None:
    """Stage the call's result and its events beside the rows its tool staged."""
    state.append(
        ToolResultMessage(
            tool_call_id=call.id, name=call.name, content=outcome.text, is_error=outcome.is_error
        )
    )
    events = [run_log.tool_call_finished(call, is_error=outcome.is_error, result=outcome.content)]
    if outcome.draft is not None:
        events.append(run_log.draft_created(call, outcome.draft))
    state.log.event(*events)
    if is_last:  # decided now, so its event is written with the step
        state.planned = plan_next(state)


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
