"""Writes of the conversations app that the API, the admin and the terminal chat make:
starting a generation, sending a message (once per idempotency key), cancelling and
requeueing runs. The worker's side of a run is in ``conversations.runs``.

A run is saved (with the user's text) before its task is enqueued, and enqueued only when
that transaction commits: the user's message is never lost, and a task never looks for a
row that isn't there yet.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace

from django.db import IntegrityError, transaction
from django.db.models import F

import providers
from adstudio.db.batch import insert_rows
from adstudio.db.clock import database_now
from adstudio.log_context import bind
from adstudio.refusals import StateConflict
from conversations.agent.prompts import brief_fields, brief_message
from conversations.models import Conversation, Run, RunStatus, StopCause
from conversations.record.messages import assistant_ui_message_id
from conversations.run_request import RunRequest
from conversations.runs.claim import heartbeat_fresh
from conversations.runs.enqueue import run_enqueue
from conversations.runs.finish import finish_locked
from conversations.runs.heartbeat import notify_cancel
from conversations.runs.locks import run_lock
from drafts.models import Ad
from drafts.services import ad_create, ad_update, ad_writable
from workspaces.models import Workspace
from workspaces.roles import Action
from workspaces.services import audit_record

logger = logging.getLogger(__name__)


def conversation_of(*, ad: Ad, provider: str | None = None) -> Conversation:
    """The ad's conversation, started now if it has none. One per ad at a time, by the
    constraint ``conversation_one_current_per_ad``: of parallel first messages, one
    creates it and the others, refused by the constraint, read it, so every message lands
    in one conversation, in order. A provider asked for explicitly becomes the
    conversation's."""
    conversation, created = Conversation.objects.get_or_create(
        ad=ad, superseded_at=None, defaults={"provider": provider or ""}
    )
    if not created and provider and conversation.provider != provider:
        conversation.provider = provider
        conversation.save(update_fields=["provider", "updated_at"])
    return conversation


def brief_send(*, request: RunRequest) -> Run:
    """The ad's brief sent to the director as a user turn (``request.text`` after it),
    queued: the first turn of the ad's conversation, or the next one when it has one
    (``conversation_of``). What generate (``ad_generate``), a chat's first message
    (``chat_message_send``), the terminal chat and the evaluations start a run with.

    With ``request.conversation`` the brief is sent into that (existing) conversation.
    An explicitly requested provider must be configured (``ProviderUnavailable``).
    """
    ad = _ad_of(request)
    if request.provider:
        providers.route(language=ad.language, market=ad.market, requested=request.provider)
    # No savepoint: inside a caller's transaction (the API's) this is part of its unit of
    # work, so an error rolls back the whole of it; alone, it is a transaction of its own.
    with transaction.atomic(savepoint=False):
        conversation = request.conversation
        if conversation is None:
            conversation = conversation_of(ad=ad, provider=request.provider)
        brief = brief_fields(ad)
        return _run_create(
            request=request,
            conversation=conversation,
            text=brief_message(brief, request.text),
            brief=brief,
        )


def ad_generate(
    *, request: RunRequest, brief: dict, workspace: Workspace | None = None
) -> tuple[Run, bool]:
    """Generate an ad from a brief, as the API's generate does, once per idempotency key
    (``run_once_per_key``): ``request.ad`` updated with the brief fields given (a new ad
    of ``request.user``'s in ``workspace`` when None), then its brief sent
    (``brief_send``), in one transaction: the brief is saved with its run, or neither
    is. Whether the user may is the caller's check (``workspaces.access``). Returns
    ``(run, created)``."""

    def start() -> Run:
        with transaction.atomic():
            if request.ad is not None:
                target = ad_update(ad=request.ad, **brief)
            else:
                target = ad_create(owner=request.user, workspace=workspace, **brief)
            return brief_send(request=replace(request, ad=target))

    return run_once_per_key(request=request, start=start)


def chat_message_send(*, request: RunRequest) -> Run:
    """A user's message about ``request.ad``: the next turn of ``request.conversation``,
    or the first turn of the ad's conversation (the brief with the message) when it has
    none yet. An archived ad takes no message (``AdArchived``)."""
    ad_writable(_ad_of(request))
    if request.conversation is None:
        return brief_send(request=request)
    return send_message(request=request)


def chat_send(*, request: RunRequest, as_superuser: bool = False) -> tuple[Run, bool]:
    """A user's chat message as both chat endpoints send it (``/chat`` and ``/ui-chat``):
    stored with its run once per idempotency key (``run_once_per_key``: the key sent
    again with another request raises ``IdempotencyKeyReused``), and on the record when
    only being a superuser allowed it. Returns ``(run, created)``."""
    run, created = run_once_per_key(
        request=request, start=lambda: chat_message_send(request=request)
    )
    if as_superuser and created:
        run_audited_as_superuser(user=request.user, run=run)
    return run, created


def _ad_of(request: RunRequest) -> Ad:
    """The ad the turn is about: the request's, or its conversation's."""
    if request.ad is not None:
        return request.ad
    if request.conversation is not None:
        return request.conversation.ad
    raise ValueError("A RunRequest names its ad or its conversation.")


class NothingToRegenerate(StateConflict):
    """The reply to regenerate is not the conversation's last finished one."""

    code = "nothing_to_regenerate"


def chat_regenerate(
    *, conversation: Conversation, user, message_id: str = "", as_superuser: bool = False
) -> Run:
    """Answer the conversation's last user message again (useChat's ``regenerate``): a
    run with the same message that replaces the last run's reply. The replaced reply is
    kept, out of the history (``Run.replaces``). ``message_id`` names the reply (its
    UIMessage id); without it, the last one. Only a finished reply can be replaced
    (``NothingToRegenerate``), and only once (``Run.replaces`` is unique). On the
    record when only being a superuser allowed it."""
    ad_writable(conversation.ad)
    try:
        with transaction.atomic():
            last = (
                Run.objects.select_for_update()
                .filter(conversation=conversation)
                .order_by("-created_at")
                .first()
            )
            if last is None or (message_id and message_id != assistant_ui_message_id(last.pk)):
                raise NothingToRegenerate("Only the conversation's last reply can be regenerated.")
            if last.status not in RunStatus.finished():
                raise NothingToRegenerate("The last reply is still being written: stop it first.")
            run = _run_create(
                request=RunRequest(user=user, client_message_id=last.client_message_id),
                conversation=conversation,
                text=last.input_text,
                brief=last.brief,
                replaces=last,
            )
    except IntegrityError:  # a regenerate at the same moment replaced it first
        if not Run.objects.filter(replaces_id=last.pk).exists():
            raise
        raise NothingToRegenerate("This reply is being written again already.") from None
    if as_superuser:
        run_audited_as_superuser(user=user, run=run)
    return run


def send_message(*, request: RunRequest) -> Run:
    """Queue a user turn ("make the music more upbeat") in ``request.conversation``.

    One INSERT, so it needs no transaction of its own: outside one, the task is enqueued
    as soon as the row is in."""
    if request.conversation is None:
        raise ValueError("send_message sends into a conversation: name it in the RunRequest.")
    return _run_create(request=request, conversation=request.conversation, text=request.text)


def _run_create(
    *,
    request: RunRequest,
    conversation: Conversation,
    text: str,
    brief: dict | None = None,
    replaces: Run | None = None,
) -> Run:
    """The run row of ``request`` in ``conversation``, with ``text`` as its user message,
    stored and its task sent when the transaction commits."""
    run = Run(
        conversation=conversation,
        input_text=text,
        brief=brief,
        client_message_id=request.client_message_id,
        replaces=replaces,
        requested_by=request.user,
        idempotency_key=request.idempotency_key,
        idempotency_fingerprint=request.idempotency_fingerprint,
    )
    insert_rows(run)  # the ORM's INSERT compiled per message cost more than it runs
    run_enqueue(run_id=run.pk)
    bind(run_id=run.pk, conversation_id=conversation.pk, ad_id=conversation.ad_id)
    logger.info("run %s queued", run.pk)
    return run


class IdempotencyKeyReused(Exception):
    """The key already started a run for a different request."""


def run_once_per_key(*, request: RunRequest, start: Callable[[], Run]) -> tuple[Run, bool]:
    """``start()`` a run unless ``request.user`` already started one with
    ``request.idempotency_key``; returns ``(run, created)``. Two racing requests with one
    key end with one run: the loser's whole transaction (ad, conversation, run) rolls back
    on the unique constraint ``run_unique_idempotency_key``. ``start`` stores the
    request's fingerprint with the run: the key sent again with another request raises
    ``IdempotencyKeyReused`` rather than answer it with a run it did not ask for.

    ``start`` makes its own writes atomic; without a key it is simply called, so that a
    chat message costs one INSERT, not a transaction around it."""
    key = request.idempotency_key
    if not key:
        return start(), True
    keyed = Run.objects.filter(requested_by=request.user, idempotency_key=key)
    run = keyed.first()
    if run is None:
        try:
            with transaction.atomic():
                return start(), True
        except IntegrityError:
            # The constraint's name is in PostgreSQL's message, not in SQLite's: whether
            # a racing request's run now holds the key is the test that works on both.
            run = keyed.first()
            if run is None:
                raise
    fingerprint = run.idempotency_fingerprint
    if fingerprint and fingerprint != request.idempotency_fingerprint:
        raise IdempotencyKeyReused(
            f"Idempotency-Key {key!r} was already used for a different request."
        )
    return run, False


def run_audited_as_superuser(*, user, run: Run, action: Action = Action.CHAT) -> None:
    """Record a run a superuser started (or cancelled) where no role of theirs allowed
    it: the audit log says who did it."""
    audit_record(
        workspace_id=run.conversation.ad.workspace_id,
        user=user,
        action=action,
        target=run,
        as_superuser=True,
        ad=run.conversation.ad_id,
    )


def run_cancel(*, run: Run) -> Run:
    """Cancel a queued run at once; ask a running one to stop at its next step."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.status == RunStatus.QUEUED:
            finish_locked(run, status=RunStatus.CANCELLED, cause=StopCause.CANCELLED)
        elif run.status == RunStatus.RUNNING and not run.cancel_requested:
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested"])
            notify_cancel(run.pk)  # delivered at commit, to the worker that holds the run
    return run


def run_requeue(*, run: Run) -> bool:
    """Queue a failed run, or one whose worker died, again; it resumes from its last
    persisted step. Returns False for a run that cannot be requeued: succeeded,
    cancelled, running with a live worker, or failed with a later turn of its
    conversation sent since (it would be answered out of order)."""
    with transaction.atomic():
        locked = run_lock(run_id=run.pk)
        if locked is None:  # deleted meanwhile
            return False
        run = locked.run
        now = database_now()  # the clock the heartbeats were written by
        stuck = run.status == RunStatus.RUNNING and not heartbeat_fresh(run, now)
        if not (run.status in (RunStatus.FAILED, RunStatus.QUEUED) or stuck):
            return False
        if (
            run.status == RunStatus.FAILED
            and Run.objects.filter(
                conversation_id=run.conversation_id, created_at__gt=run.created_at
            ).exists()
        ):
            return False
        if run.status == RunStatus.FAILED:
            # Its usage was added to the conversation when it failed; it is added again,
            # in full, when it finishes this time.
            Conversation.objects.filter(pk=run.conversation_id).update(
                prompt_tokens=F("prompt_tokens") - run.prompt_tokens,
                completion_tokens=F("completion_tokens") - run.completion_tokens,
                cached_tokens=F("cached_tokens") - run.cached_tokens,
                cost=F("cost") - run.cost,
            )
        run.status = RunStatus.QUEUED
        run.heartbeat_at = None
        run.finished_at = None
        run.stop_cause = ""
        run.error_code = ""
        run.error_message = ""
        run.enqueued_at = now  # sent now: the recovery sweep waits before resending
        run.save(
            update_fields=[
                "status",
                "heartbeat_at",
                "finished_at",
                "stop_cause",
                "error_code",
                "error_message",
                "enqueued_at",
            ]
        )
        run_enqueue(run_id=run.pk)
        return True
