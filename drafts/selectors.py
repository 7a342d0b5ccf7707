"""Reads of ads and their drafts: what a user may see (through their workspaces), and the
latest and active version of each kind."""

from __future__ import annotations

import json
import uuid
from functools import cache

from django.db.models import Q, QuerySet

from adstudio.db.sql import quote_name
from drafts.models import Ad, Draft, DraftKind, DraftStatus
from workspaces.access import scoped
from workspaces.roles import Action


def draft_latest(*, ad: Ad, kind: DraftKind | str) -> Draft | None:
    return Draft.objects.filter(ad_id=ad.pk, kind=kind).order_by("-version").first()


def draft_state(*, ad: Ad) -> dict[str, dict]:
    """Per kind: the latest and the active version with their one-line summaries, and
    the archived versions (oldest first)."""
    state: dict[str, dict] = {
        kind: {
            "latest": None,
            "latestSummary": None,
            "active": None,
            "activeSummary": None,
            "archived": [],
        }
        for kind in DraftKind.values
    }
    latest_seen: set[str] = set()
    rows = (
        Draft.objects.filter(ad_id=ad.pk)
        .order_by("kind", "-version")
        .only("kind", "version", "status", "summary")
    )
    for draft in rows:
        entry = state[draft.kind]
        if draft.kind not in latest_seen:
            latest_seen.add(draft.kind)
            entry["latest"], entry["latestSummary"] = draft.label, draft.summary
        if draft.status == DraftStatus.ACTIVE:
            entry["active"], entry["activeSummary"] = draft.label, draft.summary
        elif draft.status == DraftStatus.ARCHIVED:
            entry["archived"].insert(0, draft.label)  # rows come newest first
    return state


@cache
def latest_versions_sql(ad_id_column: str) -> str:
    """A SQL expression (PostgreSQL) for the latest draft of each kind of the ad whose id
    is ``ad_id_column``, for a statement that reads it along with other things: a JSON
    object of kind to ``[id, version]``, NULL when the ad has no draft. Read it with
    ``latest_versions_from``."""
    table = quote_name(Draft._meta.db_table)
    return (
        "(SELECT jsonb_object_agg(d.kind, jsonb_build_array(d.id, d.version)) FROM "
        f"(SELECT DISTINCT ON (kind) kind, id, version FROM {table} "
        f"WHERE ad_id = {ad_id_column} ORDER BY kind, version DESC) d)"
    )


def latest_versions_from(value: str | None) -> dict[str, tuple[uuid.UUID, int]]:
    """``latest_versions_sql``'s value as read (Django reads JSON columns as text)."""
    latest = json.loads(value) if value else {}
    return {kind: (uuid.UUID(id_), version) for kind, (id_, version) in latest.items()}


def drafts_archived_by_activating(draft: Draft) -> QuerySet[Draft]:
    """What activating ``draft`` archives, oldest first: the version of its kind active
    now, and every older version never activated (superseded before it went live)."""
    return (
        Draft.objects.filter(ad_id=draft.ad_id, kind=draft.kind)
        .filter(
            Q(status=DraftStatus.ACTIVE) | Q(status=DraftStatus.DRAFT, version__lt=draft.version)
        )
        .exclude(pk=draft.pk)
        .order_by("version")
    )


def ads_for(user, *, action: Action | str = Action.VIEW) -> QuerySet[Ad]:
    """The ads in workspaces where ``user`` may take ``action`` (see them, by default),
    archived ones included: lists leave those out themselves."""
    return scoped(Ad.objects.all(), user, action=action)


def drafts_for(user) -> QuerySet[Draft]:
    """The drafts of the ads ``user`` may see."""
    return scoped(Draft.objects.select_related("ad", "parent"), user, workspace="ad__workspace")
