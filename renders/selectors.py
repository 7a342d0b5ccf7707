"""Reads of scratch tracks for the rest of the product."""

from __future__ import annotations

from drafts.models import Ad, DraftKind
from renders.models import Render, RenderStatus


def measured_speech_seconds(*, ad: Ad, voices_version: int) -> float | None:
    """How long the speech of ``voices_version`` ran in the latest scratch track made of
    it, or None when none was."""
    render = (
        Render.objects.filter(
            ad=ad,
            status=RenderStatus.DONE,
            voices__kind=DraftKind.VOICES,
            voices__version=voices_version,
        )
        .order_by("-finished_at")
        .only("timeline")
        .first()
    )
    if render is None or "speechEndS" not in render.timeline:
        return None
    return float(render.timeline["speechEndS"])
