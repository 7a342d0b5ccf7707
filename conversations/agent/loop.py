"""The agent loop: one run answers one user turn through model calls and tool calls.

Each step returns what happens next (``RunTools``, ``Answer`` or ``Stop``) and is stored
as it happens (``conversations.record.log``), so a run that dies, or loses its database,
is resumed from its last stored step and no tool call is executed twice.
"""

from __future__ import annotations

import logging
import time
import uuid

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import InterfaceError, OperationalError

import providers
from adstudio import observability
from adstudio.db.batch import WriteConflict
from conversations.agent.state import (
    Answer,
    RunState,
    RunTools,
    Stop,
    load_run_state,
    resume_point,
)
from conversations.agent.steps import (
    TAKEN_OVER,
    TOO_LONG,
    model_step,
    plan_next,
    request_tokens,
    run_tools,
)
from conversations.models import RunStatus, StopCause
from conversations.record.log import ClaimLost
from conversations.runs.claim import Claim, run_claim, run_claim_again
from conversations.runs.finish import history_whole, run_finish, run_held
from conversations.runs.heartbeat import Heartbeat
from conversations.runs.step_gate import step_gate
from providers import ProviderError

logger = logging.getLogger(__name__)

# Times one task takes its run again from what the database holds (after a lost
# connection or a write conflict); past that a history that will not come out whole ends
# the run failed (a database that stays away leaves it to the recovery sweep). Not
# ``Run.resumes``, which counts takeovers from dead workers (ADSTUDIO_RUN_MAX_RESUMES).
_RECLAIMS_PER_TASK = 5
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
            _execute(claim, give_up=resumes >= _RECLAIMS_PER_TASK)
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
            state = load_run_state(claim, heartbeat)
            observability.run_started(run, provider=state.route[0].name, resumed=claim.resumed)
            if claim.resumed:
                state.log.interrupted_call(
                    route=state.route, prompt_tokens=request_tokens(state.messages)
                )
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
        outcome = Stop(RunStatus.FAILED, StopCause.ERROR, "timeout", TOO_LONG)
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


def _drive(state: RunState) -> Answer | Stop:
    resume = resume_point(state)
    if isinstance(resume, Answer):
        return resume
    if state.heartbeat.cancel_requested:  # cancelled while no worker held it
        return Stop(RunStatus.CANCELLED, StopCause.CANCELLED)
    if isinstance(resume, RunTools):
        run_tools(state, resume)
    while True:
        plan, state.planned = state.planned or plan_next(state), None
        if isinstance(plan, Stop):
            return plan
        step = model_step(state, last_round=plan.last_round)
        if plan.last_round:
            text = step.text if isinstance(step, Answer) else ""
            staged = isinstance(step, Answer) and step.staged
            return Answer(text=text, cause=StopCause.MAX_ROUNDS, staged=staged)
        if not isinstance(step, RunTools):
            return step
        if state.heartbeat.lost:  # taken over while it waited on the model
            return TAKEN_OVER
        run_tools(state, step)
