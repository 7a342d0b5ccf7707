"""Scratch tracks asked for and made: which versions a render is of, one render per
combination (asked twice, made once), the render task's work, and the authorised,
expiring link to its audio."""

from __future__ import annotations

import logging
import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from adstudio.celery import app as celery_app
from adstudio.refusals import StateConflict
from drafts.models import Ad, Draft, DraftKind, DraftStatus
from renders.models import Render, RenderStatus
from workspaces.access import may
from workspaces.roles import Action

logger = logging.getLogger(__name__)

RENDER_TASK = "renders.tasks.render_scratch_track"
LATEST, ACTIVE = "latest", "active"
_LINK_SALT = "renders.audio"


class NoSuchVersion(StateConflict):
    """A version asked for that the ad does not have."""

    code = "no_such_version"


def versions_of(
    ad: Ad, *, base: str = LATEST, chosen: dict[str, int | None] | None = None
) -> dict[str, Draft | None]:
    """Per kind, the draft to render: the one ``chosen`` names (a version number; None
    leaves the kind out), else the latest (or the active, with ``base="active"``)."""
    chosen = chosen or {}
    picked: dict[str, Draft | None] = {}
    for kind in DraftKind.values:
        drafts = Draft.objects.filter(ad_id=ad.pk, kind=kind)
        if kind in chosen:
            if chosen[kind] is None:
                picked[kind] = None
                continue
            picked[kind] = drafts.filter(version=chosen[kind]).first()
            if picked[kind] is None:
                raise NoSuchVersion(f"The ad has no {kind} v{chosen[kind]}.")
        elif base == ACTIVE:
            picked[kind] = drafts.filter(status=DraftStatus.ACTIVE).first()
        else:
            picked[kind] = drafts.order_by("-version").first()
    return picked


def render_request(*, ad: Ad, versions: dict[str, Draft | None], user=None) -> tuple[Render, bool]:
    """The render of these versions: the one made or being made, or a new one queued (its
    task sent when the row is committed). A failed one, or one whose task died, is tried
    again. ``(render, queued)``."""
    fields = {kind: versions.get(kind) for kind in DraftKind.values}
    with transaction.atomic():
        render = render_of(ad, fields)
        if render is None:
            try:
                with transaction.atomic():
                    render = Render.objects.create(ad=ad, requested_by=user, **fields)
            except IntegrityError:  # asked for at the same moment by another request
                return render_of(ad, fields), False
        elif not _requeued(render):
            return render, False
        pk = render.pk
        transaction.on_commit(lambda: celery_app.tasks[RENDER_TASK].delay(str(pk)))
    return render, True


def _requeued(render: Render) -> bool:
    """Queue a failed render again, or one whose task stopped mid-render (its worker died:
    claimed longer ago than ``ADSTUDIO_RENDER_STALE_AFTER``). One statement decides, so two
    requests at once queue it once."""
    stale = timezone.now() - timedelta(seconds=settings.ADSTUDIO_RENDER_STALE_AFTER)
    again = Q(status=RenderStatus.FAILED) | Q(status=RenderStatus.RENDERING, started_at__lt=stale)
    if not Render.objects.filter(again, pk=render.pk).update(
        status=RenderStatus.QUEUED, error="", started_at=None
    ):
        return False
    render.status, render.error, render.started_at = RenderStatus.QUEUED, "", None
    return True


def render_of(ad: Ad, fields: dict[str, Draft | None]) -> Render | None:
    """The render of exactly these versions, if one was asked for."""
    lookup: dict[str, object] = {}
    for kind, draft in fields.items():
        if draft is None:
            lookup[f"{kind}__isnull"] = True
        else:
            lookup[kind] = draft
    return Render.objects.filter(ad=ad, **lookup).first()


def render_make(render_id: uuid.UUID | str) -> Render | None:
    """Make the render's audio (the task's work): claimed from ``queued`` first, so two
    deliveries of the task make it once."""
    claimed = Render.objects.filter(pk=render_id, status=RenderStatus.QUEUED).update(
        status=RenderStatus.RENDERING, started_at=timezone.now()
    )
    if not claimed:
        return None
    # Imported here: numpy, scipy and the codecs take about a second, which every process
    # that loads the apps would pay (workers load them at start: ``tasks``).
    from audio import mix

    render = Render.objects.select_related("ad", "voices", "music", "sfx").get(pk=render_id)
    started = time.monotonic()
    try:
        made = mix.render(
            language=render.ad.language,
            slot_s=float(render.ad.duration_s),
            voices=render.voices.payload if render.voices else None,
            music=render.music.payload if render.music else None,
            sfx=render.sfx.payload if render.sfx else None,
            loudness_lufs=settings.ADSTUDIO_RENDER_LOUDNESS_LUFS,
        )
        ogg, wav = made.ogg_opus(), made.wav()
    except (mix.RenderError, ValueError) as exc:
        return _failed(render, str(exc))
    except Exception:
        logger.exception("render %s failed", render.pk)
        return _failed(render, "The render failed with an internal error.")
    render.audio.save(f"{render.pk}.ogg", ContentFile(ogg), save=False)
    render.wav.save(f"{render.pk}.wav", ContentFile(wav), save=False)
    render.timeline = {
        **made.timeline.as_json(),
        "warnings": made.warnings,
        # Seconds of speech made per second of synthesis.
        "synthesisRealTimeFactor": round(made.synthesis_s / max(made.synthesis_wall_s, 1e-6), 1),
    }
    render.seconds = round(made.seconds, 3)
    render.loudness_lufs = made.loudness_lufs
    render.render_ms = round((time.monotonic() - started) * 1000)
    render.status, render.finished_at = RenderStatus.DONE, timezone.now()
    render.save()
    return render


def _failed(render: Render, error: str) -> Render:
    render.status, render.error, render.finished_at = RenderStatus.FAILED, error, timezone.now()
    render.save(update_fields=["status", "error", "finished_at"])
    return render


def render_delete(render: Render) -> None:
    """The render and its files; nothing else refers to a render."""
    for field in (render.audio, render.wav):
        if field:
            field.delete(save=False)
    render.delete()


def audio_link_token(render: Render, *, user, fmt: str) -> str:
    """A token for the render's audio as ``fmt`` (ogg or wav), valid for
    ``ADSTUDIO_RENDER_LINK_SECONDS`` and only while ``user`` may see the ad."""
    return signing.dumps(
        {"render": str(render.pk), "user": user.pk, "format": fmt}, salt=_LINK_SALT, compress=True
    )


def render_for_token(token: str) -> tuple[Render, str] | None:
    """The render and format a token is for, while it is fresh and its user may still see
    the ad; None otherwise (a 404 says nothing of which)."""
    try:
        claims = signing.loads(
            token, salt=_LINK_SALT, max_age=settings.ADSTUDIO_RENDER_LINK_SECONDS
        )
        render = Render.objects.select_related("ad", "ad__workspace").get(
            pk=claims["render"], status=RenderStatus.DONE
        )
    except (signing.BadSignature, Render.DoesNotExist, KeyError, ValueError, TypeError):
        return None
    user = get_user_model().objects.filter(pk=claims.get("user"), is_active=True).first()
    if user is None or not may(user, render.ad.workspace_id, Action.VIEW):
        return None
    if claims.get("format") not in ("ogg", "wav"):
        return None
    return render, claims["format"]


def render_report(render: Render) -> str:
    """The timeline as lines a person reads in a terminal."""
    timeline = render.timeline
    lines = [
        f"Scratch track of {render.versions_label()}: {render.seconds:.2f} s for a "
        f"{timeline.get('slotS', 0):g} s slot, speech ends at {timeline.get('speechEndS', 0):.2f} s"
    ]
    for segment in timeline.get("segments", []):
        span = f"{segment['startS']:6.2f} - {segment['endS']:6.2f} s"
        lines.append(f"  {segment['ref']:<8} {span}  {segment.get('label', '')[:60]}")
    lines += [f"  warning: {warning}" for warning in timeline.get("warnings", [])]
    return "\n".join(lines)
