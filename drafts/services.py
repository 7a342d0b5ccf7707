"""Writes to ads and drafts: creating versions and activating one of them."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from adstudio.db.batch import Batch, insert_rows, new_row
from adstudio.refusals import StateConflict
from adstudio.text import clip_words
from adstudio.tools import DraftVersions, StagedDraft
from drafts.locks import ad_lock
from drafts.models import (
    Activation,
    ActivationSource,
    Ad,
    Draft,
    DraftAuthor,
    DraftStatus,
)
from drafts.payloads import Version, kind_of, payload_of, summary_of
from drafts.selectors import drafts_archived_by_activating
from workspaces.models import Workspace
from workspaces.roles import Action
from workspaces.services import audit_record, workspace_personal


class DraftNotInAd(Exception):
    """The draft belongs to another ad: it cannot be activated through this one."""


@dataclass(frozen=True)
class ActivationResult:
    draft: Draft
    archived: tuple[Draft, ...]  # in version order
    changed: bool  # False when the draft was already active
    replaced: Draft | None = None  # of those archived, the version that was active

    @property
    def message(self) -> str:
        if not self.changed:
            return f"{self.draft.kind} {self.draft.label} was already active."
        if not self.archived:
            return f"Activated {self.draft.kind} {self.draft.label}."
        labels = ", ".join(draft.label for draft in self.archived)
        return f"Activated {self.draft.kind} {self.draft.label} (archived {labels})."


BRIEF_FIELDS = ("title", "client", "audience", "duration_s", "market", "language", "context")


class AdArchived(StateConflict):
    """The ad is archived: it is read-only."""

    code = "archived"

    def __init__(self, ad: Ad) -> None:
        super().__init__(f"Ad {ad.pk} is archived: it can be read, not changed.")


def ad_writable(ad: Ad) -> Ad:
    """``ad``, or ``AdArchived`` when it is archived: every change to an ad (its brief, its
    drafts' activation, a message to its director) asks this first."""
    if ad.archived_at is not None:
        raise AdArchived(ad)
    return ad


def ad_create(
    *, owner, workspace: Workspace | None = None, as_superuser: bool = False, **brief
) -> Ad:
    """A new ad from a brief (fields as in ``BRIEF_FIELDS``) in ``workspace`` (the owner's
    personal one by default); the title defaults to the client description. Whether the
    owner may create ads there is the caller's check (``workspaces.access``); one only a
    superuser's rights allowed is recorded in the audit log."""
    fields = {k: v for k, v in brief.items() if k in BRIEF_FIELDS}
    fields.setdefault("title", "")
    if not fields["title"]:
        fields["title"] = fields.get("client", "")[:200] or "Untitled ad"
    if workspace is None:
        workspace = workspace_personal(user=owner)
    with transaction.atomic():
        ad = Ad.objects.create(owner=owner, workspace=workspace, **fields)
        if as_superuser:
            audit_record(
                workspace_id=workspace.pk,
                user=owner,
                action=Action.CREATE_AD,
                target=ad,
                as_superuser=True,
            )
    return ad


def ad_archive(*, ad: Ad, by, as_superuser: bool = False) -> Ad:
    """Archive ``ad`` (the API's DELETE): it stays, with everything it points at, read-only
    and out of lists. Archiving an archived ad changes nothing."""
    with transaction.atomic():
        ad_lock(ad_id=ad.pk)
        ad.refresh_from_db(fields=["archived_at"])
        if ad.archived_at is None:
            ad.archived_at = timezone.now()
            ad.save(update_fields=["archived_at", "updated_at"])
            audit_record(
                workspace_id=ad.workspace_id,
                user=by,
                action=Action.ARCHIVE_AD,
                target=ad,
                as_superuser=as_superuser,
            )
    return ad


def ad_move(*, ad: Ad, workspace: Workspace, by, as_superuser: bool = False) -> Ad:
    """Move ``ad`` (with its drafts, conversation and runs) to ``workspace``; recorded in
    both workspaces' audit logs."""
    with transaction.atomic():
        ad_lock(ad_id=ad.pk)
        ad.refresh_from_db(fields=["workspace", "archived_at"])
        ad_writable(ad)
        source = ad.workspace_id
        if source == workspace.pk:
            return ad
        ad.workspace = workspace
        ad.save(update_fields=["workspace", "updated_at"])
        for workspace_id, direction in ((source, "out"), (workspace.pk, "in")):
            audit_record(
                workspace_id=workspace_id,
                user=by,
                action=Action.MOVE_AD,
                target=ad,
                as_superuser=as_superuser,
                direction=direction,
                source=source,
                destination=workspace.pk,
            )
    return ad


def ad_update(*, ad: Ad, by=None, as_superuser: bool = False, **brief) -> Ad:
    """Change the brief fields given; the drafts written so far stay as they are. A change
    only a superuser's rights allowed is recorded in the audit log with it."""
    ad_writable(ad)
    changed = [k for k, v in brief.items() if k in BRIEF_FIELDS and getattr(ad, k) != v]
    if not changed:
        return ad
    for key in changed:
        setattr(ad, key, brief[key])
    with transaction.atomic():
        ad.save(update_fields=[*changed, "updated_at"])
        if as_superuser:
            audit_record(
                workspace_id=ad.workspace_id,
                user=by,
                action=Action.EDIT_AD,
                target=ad,
                as_superuser=True,
                fields=",".join(changed),
            )
    return ad


class LatestVersions:
    """The latest version (its id and number) of each kind of one ad, as a run knows it
    (what a tool call is handed as ``adstudio.tools.DraftVersions``):
    read with the run's claim, then advanced by each draft the run stages, so that a
    draft-writing tool call need not read it. Knowledge gone stale (a draft another
    writer added since) shows at the write, as a ``WriteConflict``; a staged draft that is
    discarded makes it ``forget()``: from then on versions are read."""

    def __init__(self, latest: dict[str, tuple[uuid.UUID, int]]) -> None:
        self._latest: dict[str, tuple[uuid.UUID, int]] | None = dict(latest)

    def of(self, kind: str) -> tuple[uuid.UUID | None, int | None] | None:
        """(id, version) of the latest draft of ``kind``, (None, None) when there is none,
        None when not known."""
        if self._latest is None:
            return None
        return self._latest.get(kind, (None, None))

    def staged(self, draft: StagedDraft) -> None:
        if self._latest is not None:
            self._latest[draft.kind] = (draft.pk, draft.version)

    def forget(self) -> None:
        self._latest = None


def draft_create(
    *,
    ad: Ad,
    version: Version,
    summary: str | None = None,
    created_by: DraftAuthor | str = DraftAuthor.LLM,
    run_id: uuid.UUID | None = None,
    tool_call_id: str = "",
    batch: Batch | None = None,
    latest: DraftVersions | None = None,
) -> tuple[Draft, bool]:
    """Write ``version`` (a version shape of ``drafts.payloads``, whose type is the kind)
    as the next version of its kind for ``ad``; returns ``(draft, created)``. The summary
    defaults to the version's own.

    Versions count 1, 2, 3... with no gap or duplicate. With a ``run_id`` the call is
    idempotent per ``(run_id, tool_call_id)``: a replayed tool call returns the draft it
    wrote first.

    Alone, the draft is numbered and written under the ad's row lock. With a ``batch`` (a
    tool call's) it is numbered from the latest version as read now, without a lock or a
    transaction, and staged there, to be written with the call's result in one statement:
    a concurrent writer that took the same number first makes that statement fail with
    ``WriteConflict`` (the unique version constraint), writing nothing, and the caller
    reads and numbers again. Two round trips instead of five (BEGIN, the lock, the read,
    the write, COMMIT), in every draft-writing tool call; one when the ``latest`` versions
    are known (then a replayed call is found by the write, as a ``WriteConflict`` of the
    unique tool call constraint, and the caller reads again).
    """
    kind = kind_of(version)
    fields = {
        "ad_id": ad.pk,
        "kind": kind,
        "payload": payload_of(version),
        "summary": clip_words(summary_of(version) if summary is None else summary, 500),
        "created_by": created_by,
        "run_id": run_id,
        "tool_call_id": tool_call_id,
    }
    if batch is not None:
        known = latest.of(kind) if latest is not None else None
        if known is None:
            draft, created = _next_version(**fields)
        else:
            parent_id, parent_version = known
            draft = new_row(Draft, version=(parent_version or 0) + 1, parent_id=parent_id, **fields)
            created = True
        if created:
            batch.insert(draft)
            if latest is not None:
                latest.staged(draft)
        return draft, created
    # No savepoint of its own: inside a caller's transaction it is part of that unit of
    # work; alone, it is one.
    with transaction.atomic(savepoint=False):
        # The lock first, then the read, each statement with a snapshot taken after the
        # lock is held: a subquery of the locking statement itself would read the
        # versions as they were before a concurrent writer committed.
        ad_lock(ad_id=ad.pk)
        draft, created = _next_version(**fields)
        if created:
            insert_rows(draft)
        return draft, created


def _next_version(**fields) -> tuple[Draft, bool]:
    """The draft this tool call wrote before (and False), or a new unsaved draft numbered
    after the latest version of its kind (and True)."""
    parent_id, parent_version, replayed_id = _versions(
        ad_id=fields["ad_id"],
        kind=fields["kind"],
        run_id=fields["run_id"],
        tool_call_id=fields["tool_call_id"],
    )
    if replayed_id is not None:
        return Draft.objects.get(pk=replayed_id), False
    return new_row(Draft, version=(parent_version or 0) + 1, parent_id=parent_id, **fields), True


def _versions(
    *, ad_id: uuid.UUID, kind: str, run_id: uuid.UUID | None, tool_call_id: str
) -> tuple[uuid.UUID | None, int | None, uuid.UUID | None]:
    """The latest draft of ``kind`` (id, version) and the draft this tool call wrote before,
    if it did: one query. Plain SQL, since it runs in every draft-writing tool call and
    the ORM's compilation of its three subqueries cost more than the query itself."""
    table = Draft._meta.db_table
    uuid_param = Draft._meta.pk.get_db_prep_value
    latest = f"FROM {table} WHERE ad_id = %s AND kind = %s ORDER BY version DESC LIMIT 1"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT (SELECT id {latest}), (SELECT version {latest}), "
            f"(SELECT id FROM {table} WHERE run_id = %s AND tool_call_id = %s)",
            [
                *(uuid_param(ad_id, connection), kind) * 2,
                uuid_param(run_id, connection),
                tool_call_id,
            ],
        )
        parent_id, version, replayed_id = cursor.fetchone()
    to_uuid = Draft._meta.pk.to_python
    return to_uuid(parent_id), version, to_uuid(replayed_id)


def draft_activate(
    *,
    ad: Ad,
    draft_id: uuid.UUID,
    by=None,
    source: ActivationSource | str = ActivationSource.API,
    as_superuser: bool = False,
) -> ActivationResult:
    """Make ``draft_id`` the live version of its kind for ``ad``, as ``by`` (a user) did it
    through ``source``.

    In one transaction under the ad's lock: archive the version active now and every
    older version never activated (superseded before it went live), activate the chosen
    one, and record the activation. Newer drafts stay drafts, still to be reviewed.
    Activating the active version is a no-op, not recorded. A draft of another ad raises
    ``DraftNotInAd`` and changes nothing, an archived ad ``AdArchived``. Who may activate
    is the caller's decision, made by the role table (``workspaces.access``).
    """
    with transaction.atomic():
        ad_lock(ad_id=ad.pk)
        ad.refresh_from_db(fields=["archived_at"])
        ad_writable(ad)
        draft = Draft.objects.filter(pk=draft_id, ad_id=ad.pk).first()
        if draft is None:
            raise DraftNotInAd(f"Draft {draft_id} does not belong to ad {ad.pk}.")
        if draft.status == DraftStatus.ACTIVE:
            return ActivationResult(draft=draft, archived=(), changed=False)
        archived = tuple(drafts_archived_by_activating(draft))
        replaced = next((old for old in archived if old.status == DraftStatus.ACTIVE), None)
        Draft.objects.filter(pk__in=[old.pk for old in archived]).update(
            status=DraftStatus.ARCHIVED
        )
        for old in archived:
            old.status = DraftStatus.ARCHIVED
        draft.status = DraftStatus.ACTIVE
        draft.activated_at = timezone.now()
        draft.save(update_fields=["status", "activated_at"])
        Activation.objects.create(
            ad_id=ad.pk,
            draft=draft,
            replaced=replaced,
            archived_versions=[old.version for old in archived],
            user=by if by is not None and by.is_authenticated else None,
            source=source,
            as_superuser=as_superuser,
        )
        return ActivationResult(draft=draft, archived=archived, changed=True, replaced=replaced)
