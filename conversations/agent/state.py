"""What one run works with: what happens next (``RunTools``, ``Answer``, ``Stop``,
``CallModel``), the run's state, loaded from its claim, and where a resumed run picks up.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.conf import settings

import providers
from adstudio import log_context
from conversations.agent.prompts import summary_block
from conversations.agent.summary import summarise_if_needed
from conversations.models import Conversation, MessageRole, Run, RunStatus, StopCause
from conversations.models import Message as MessageRow
from conversations.record.log import RunLog
from conversations.record.messages import HistoryRow, history_rows, row_to_message
from conversations.record.tokens import message_tokens
from conversations.runs.claim import Claim
from conversations.runs.heartbeat import Heartbeat
from drafts.services import LatestVersions
from providers import Message, ToolCall, UserMessage

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


# --- The state of a claimed run ---------------------------------------------------------


def load_run_state(claim: Claim, heartbeat: Heartbeat) -> RunState:
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
        if row.run_id == run.pk and row.role == MessageRole.TOOL and row.is_error:
            state.failures[row.name] += 1
        if row.run_id == run.pk and row.role == MessageRole.USER and not row.tokens:
            # The claim writes the user message before its token count, which is written
            # with the run's next step (or now, if its worker stopped before that).
            rows[n] = row._replace(tokens=message_tokens(UserMessage(text=row.text)))
            log.batch.update(MessageRow, row.id, tokens=rows[n].tokens)
    if claim.call_announced:  # the claim wrote round 1's model_call.started
        state.planned = CallModel(last_round=run.rounds >= settings.ADSTUDIO_MAX_ROUNDS)
        state.call_announced = True
    if not any(r.run_id == run.pk and r.role == MessageRole.USER for r in rows):
        log.append(UserMessage(text=run.input_text))
    if not heartbeat.cancel_requested:  # a cancelled run calls no model, not even this
        summarise_if_needed(log, route=route)
    state.messages = _messages_from(state)
    return state


def _claimed_user_message(run: Run, *, message_id: int, seq: int) -> HistoryRow:
    """The run's user message as its claim wrote it (``runs.claim._claim_queued_sql``)."""
    return HistoryRow(
        seq=seq,
        role=MessageRole.USER,
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


def resume_point(state: RunState) -> RunTools | Answer | None:
    """Where a resumed run picks up: unanswered calls of its last assistant message, or
    its answer if it was written before the worker died."""
    own = [r for r in state.log.rows if r.run_id == state.run.pk]
    assistant = next((r for r in reversed(own) if r.role == MessageRole.ASSISTANT), None)
    if assistant is None:
        return None
    answered = {r.tool_call_id for r in own if r.role == MessageRole.TOOL and r.seq > assistant.seq}
    if (assistant.provider_data or {}).get("stopped_by"):
        return None  # a reply cut short is no answer: ask the model again
    if not assistant.tool_calls:
        return Answer(text=assistant.text) if assistant is own[-1] else None
    message = row_to_message(assistant)
    pending = tuple(c for c in message.tool_calls if c.id not in answered)
    return RunTools(calls=pending, message_seq=assistant.seq) if pending else None
