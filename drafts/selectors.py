"""Reads of an ad's drafts: the latest and active version of each kind."""

from __future__ import annotations

from drafts.models import Ad, Draft, DraftKind, DraftStatus


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
