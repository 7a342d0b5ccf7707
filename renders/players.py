"""Scratch-track players for the review desk: for a combination of versions, its render
(if one was asked for), the expiring link a reviewer's <audio> plays, and the timeline as
bars; made for the draft and ad pages by ``templatetags.scratch_track``."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.urls import reverse

from drafts.models import Ad, Draft
from renders.models import Render, RenderStatus
from renders.services import (
    ACTIVE,
    LATEST,
    audio_link_token,
    render_of,
    render_quote,
    versions_of,
)

_ROWS = ("voice", "music", "sfx")


@dataclass
class Bar:
    ref: str
    label: str
    left: float  # percent of the ad's length
    width: float
    start_s: float
    end_s: float


@dataclass
class Player:
    title: str
    ad: Ad
    versions: dict[str, Draft | None]
    render: Render | None
    audio_url: str = ""
    rows: list[tuple[str, list[Bar]]] = field(default_factory=list)
    readers: list[str] = field(default_factory=list)  # who read each voice track
    estimate: dict | None = None  # what rendering it would cost in speech, before it is

    @property
    def label(self) -> str:
        return ", ".join(
            f"{kind} {draft.label}" if draft else f"no {kind}"
            for kind, draft in self.versions.items()
        )

    @property
    def state(self) -> str:
        return self.render.status if self.render else "none"

    @property
    def version_ids(self) -> dict[str, str]:
        return {kind: str(d.pk) if d else "" for kind, d in self.versions.items()}


def player(title: str, ad: Ad, versions: dict[str, Draft | None], user) -> Player:
    render = render_of(ad, versions)
    made = Player(title, ad, versions, render)
    if render is not None and render.status == RenderStatus.DONE:
        token = audio_link_token(render, user=user, fmt="ogg")
        made.audio_url = f"{reverse('render-audio', args=[render.pk])}?token={token}"
        made.rows = _bars(render.timeline)
        made.readers = readers_said(render.timeline)
    elif render is None or render.status == RenderStatus.FAILED:
        made.estimate = render_quote(ad=ad, versions=versions).as_json()
    return made


def readers_said(timeline: dict) -> list[str]:
    """Who made each voice track and the music, as the timeline says it: "track-0:
    ElevenLabs", "music: placeholder bed: Loudly not connected"."""
    return [
        f"{segment['ref']}: {segment.get('readBy') or segment.get('madeBy')}"
        for segment in timeline.get("segments", [])
        if segment.get("readBy") or segment.get("madeBy")
    ]


def _bars(timeline: dict) -> list[tuple[str, list[Bar]]]:
    length = float(timeline.get("lengthS") or 1.0)
    rows: dict[str, list[Bar]] = {kind: [] for kind in _ROWS}
    for segment in timeline.get("segments", []):
        start, end = float(segment["startS"]), float(segment["endS"])
        rows.setdefault(segment["kind"], []).append(
            Bar(
                ref=segment["ref"],
                label=segment.get("label", ""),
                left=round(100 * start / length, 3),
                width=round(100 * (end - start) / length, 3),
                start_s=start,
                end_s=end,
            )
        )
    return [(kind, bars) for kind, bars in rows.items() if bars]


def players_of_draft(draft: Draft, user) -> list[Player]:
    """The draft with the latest others; and the version before it of its kind, with the
    same others, to compare by ear."""
    others = versions_of(draft.ad, base=LATEST)
    shown = [player("This version", draft.ad, {**others, draft.kind: draft}, user)]
    before = (
        Draft.objects.filter(ad_id=draft.ad_id, kind=draft.kind, version__lt=draft.version)
        .order_by("-version")
        .first()
    )
    if before is not None:
        shown.append(
            player(f"With {before.label} instead", draft.ad, {**others, draft.kind: before}, user)
        )
    return shown


def players_of_ad(ad: Ad, user) -> list[Player]:
    """The active mix and the latest mix (one player when they are the same)."""
    latest = versions_of(ad, base=LATEST)
    active = versions_of(ad, base=ACTIVE)
    shown = [player("Latest versions", ad, latest, user)]
    if any(active.values()) and active != latest:
        shown.insert(0, player("Active versions", ad, active, user))
    return shown
