"""The render task's work, held to a run's standard: claimed with a token and a lease (the
database's clock), the lease renewed as it goes, the files stored whole under the claim's
own names, then the row written only if the token is still the latest (a fenced write).

Every way it can end leads to ``done``, to ``failed`` with the error named, or to
``TryAgain`` (the database is out of reach, so nothing can be written: the task retries
with backoff, and past its retries the recovery sweep sends it again). A task that lost its
claim writes nothing and removes what it stored."""

from __future__ import annotations

import logging
import math
import time
import uuid
from dataclasses import dataclass, replace
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce, Now
from django.utils import timezone

from adstudio import observability
from audio.presets import PRESETS, STREAMING
from renders import files
from renders.cast_lines import cast_lines, cast_of, for_the_mix, readers_in_timeline
from renders.models import FILE_FIELDS, Render, RenderPreset, RenderStatus
from speech.music_reading import MusicRead, read_for_render
from speech.reading import LineRead

logger = logging.getLogger(__name__)

# The database out of reach: nothing about the render can be written now.
UNREACHABLE = (OperationalError, InterfaceError)
# Seconds between the attempts of a render whose database is out of reach: about a lease
# (ADSTUDIO_RENDER_STALE_AFTER's default) in all. In the task rather than as Celery
# retries, whose messages wait in a worker's memory and are lost with it (and eager tasks,
# the embedded default, cannot retry).
RETRY_DELAYS_S = (0.1, 0.2, 0.5, 1, 2, 4, 5, 5, 5)


class TryAgain(Exception):
    """The database could not be reached; ``holder`` is the claim the task still holds (to
    take again on its retry), or None when it had none."""

    def __init__(self, holder: int | None, reason: str) -> None:
        super().__init__(reason)
        self.holder = holder


class ClaimLost(Exception):
    """Another task holds the render now (this one's lease ran out and the sweep sent it
    again), or it ended: this task must write nothing more."""


@dataclass(frozen=True)
class Claim:
    render_id: uuid.UUID
    token: int


def _lease():
    """The end of a lease taken now, by the database's clock."""
    return Now() + timedelta(seconds=settings.ADSTUDIO_RENDER_STALE_AFTER)


def render_claim(render_id: uuid.UUID | str, *, holder: int | None = None) -> Claim | None:
    """Take a queued render for this task (its token: the row's ``claims`` plus one), or
    take back the claim ``holder`` this task held before losing the database (same token).
    None when it is not this task's to make: made, failed, or another task's."""
    with transaction.atomic():
        fresh = Q(status=RenderStatus.QUEUED)
        if holder is not None:
            fresh |= Q(status=RenderStatus.RENDERING, claims=holder)
        row = (
            Render.objects.select_for_update()
            .filter(fresh, pk=render_id)
            .values_list("claims", "status")
            .first()
        )
        if row is None:
            return None
        token = row[0] if row[1] == RenderStatus.RENDERING else row[0] + 1
        Render.objects.filter(pk=render_id).update(
            status=RenderStatus.RENDERING,
            claims=token,
            lease_expires_at=_lease(),
            started_at=Coalesce(F("started_at"), Now()),
            error="",
        )
    return Claim(uuid.UUID(str(render_id)), token)


def _held(claim: Claim):
    return Render.objects.filter(
        pk=claim.render_id, claims=claim.token, status=RenderStatus.RENDERING
    )


def render_renew(claim: Claim) -> None:
    """Extend the lease; ``ClaimLost`` when the claim is no longer this task's."""
    if not _held(claim).update(lease_expires_at=_lease()):
        raise ClaimLost


def _renewing(claim: Claim):
    """A sign of life for the mix to give as it goes: the lease renewed when a quarter of
    it has passed since it was last, so a long ad on a busy worker keeps its claim."""
    every = settings.ADSTUDIO_RENDER_STALE_AFTER / 4
    renewed = time.monotonic()

    def progress() -> None:
        nonlocal renewed
        if time.monotonic() - renewed >= every:
            render_renew(claim)
            renewed = time.monotonic()

    return progress


def render_make(render_id: uuid.UUID | str) -> Render | None:
    """Make the render's audio (the task's work), or nothing when it is not this task's to
    make; the row as this task left it. While the database is out of reach, tried again
    on a new connection, taking back its own claim, for about a lease (``RETRY_DELAYS_S``);
    after that the recovery sweep sends the render again once the database is back."""
    holder = None
    for delay in (*RETRY_DELAYS_S, None):
        try:
            return render_attempt(render_id, holder=holder)
        except TryAgain as again:
            holder = again.holder
            if delay is None:
                logger.warning(
                    "render %s: the database is still out of reach (%s); the recovery "
                    "sweep will send it again",
                    render_id,
                    again,
                )
                return None
            time.sleep(delay)
            connection.close()  # a broken connection goes back to the pool, which drops it
    return None


def render_attempt(render_id: uuid.UUID | str, *, holder: int | None = None) -> Render | None:
    """One attempt at the render: ``TryAgain`` when the database is out of reach, with
    the claim this attempt held (to take back on the next)."""
    try:
        claim = render_claim(render_id, holder=holder)
    except UNREACHABLE as exc:
        raise TryAgain(holder, str(exc)) from exc
    if claim is None:
        return None
    try:
        return _make(claim)
    except ClaimLost:
        logger.warning("render %s: claim %d lost to another task", claim.render_id, claim.token)
        return None
    except UNREACHABLE as exc:
        raise TryAgain(claim.token, str(exc)) from exc


def _make(claim: Claim) -> Render:
    # Imported here: numpy, scipy and the codecs take about a second, which every process
    # that loads the apps would pay (workers load them at start: ``tasks``).
    from audio import mix

    render = Render.objects.select_related("ad", "voices", "music", "sfx").get(pk=claim.render_id)
    voices = render.voices.payload if render.voices else None
    cast = cast_of(voices)
    started = time.monotonic()
    try:
        music = render.music.payload if render.music else None
        reads, composed = read_for_render(
            cast_lines(voices, language=render.ad.language, cast=cast),
            music,
            concurrency=settings.ADSTUDIO_SPEECH_CONCURRENCY,
            progress=_renewing(claim),
            watch=observability.speech_call,
        )
        made = mix.render(
            language=render.ad.language,
            slot_s=float(render.ad.duration_s),
            voices=voices,
            music=music,
            sfx=render.sfx.payload if render.sfx else None,
            preset=preset_of(render.preset),
            cast=cast,
            preroll_s=settings.ADSTUDIO_RENDER_PREROLL_S,
            gap_s=settings.ADSTUDIO_RENDER_SPEAKER_GAP_S,
            progress=_renewing(claim),
            **for_the_mix(reads, composed),
        )
        render_renew(claim)
        audio = made.deliverables(
            description=f"{render.ad.title}: {render.versions_label()}"[:256],
            originated=timezone.localtime(),
        )
        render_renew(claim)
    except (ClaimLost, *UNREACHABLE):
        raise
    except (mix.RenderError, ValueError) as exc:
        return _failed(claim, str(exc) or type(exc).__name__)
    except Exception as exc:
        logger.exception("render %s failed", claim.render_id)
        return _failed(claim, f"The render failed with an internal error ({type(exc).__name__}).")
    try:
        names = files.write(claim.render_id, claim.token, audio)
    except files.StorageFailed as exc:
        logger.warning("render %s: %s", claim.render_id, exc)
        return _failed(claim, str(exc))
    try:
        _done(
            claim,
            names,
            made,
            reads,
            composed,
            render_ms=round((time.monotonic() - started) * 1000),
        )
    except BaseException:
        files.remove(names.values())  # not named by the row: nothing may point at them
        raise
    observability.render_finished(RenderStatus.DONE)
    files.prune(claim.render_id, below=claim.token)
    return Render.objects.select_related("ad", "voices", "music", "sfx").get(pk=claim.render_id)


def _done(
    claim: Claim,
    names: dict[str, str],
    made,
    reads: list[LineRead],
    composed: MusicRead | None,
    *,
    render_ms: int,
) -> None:
    """The fenced write: the row is done, naming its files, only if this claim still holds
    it; else ``ClaimLost`` (the caller removes the files)."""
    timeline = finite(
        readers_in_timeline(
            {
                **made.timeline.as_json(),
                "warnings": made.warnings,
                # Seconds of speech made per second of synthesis.
                "synthesisRealTimeFactor": round(
                    made.synthesis_s / max(made.synthesis_wall_s, 1e-6), 1
                ),
            },
            reads,
            composed,
        )
    )
    fields = {
        "status": RenderStatus.DONE,
        **{FILE_FIELDS[fmt]: name for fmt, name in names.items()},
        "timeline": timeline,
        "seconds": finite(round(made.seconds, 3)),
        "loudness_lufs": finite(made.loudness_lufs),
        "true_peak_dbtp": finite(made.true_peak_dbtp),
        "render_ms": render_ms,
        "speech_characters": sum(r.characters for r in reads),
        "speech_cost_usd": sum((r.cost_usd for r in reads), start=Decimal(0)),
        "error": "",
        "lease_expires_at": None,
        "finished_at": Now(),
    }
    if not _held(claim).update(**fields):
        raise ClaimLost


def preset_of(name: str):
    """The mastering of a render's preset; ``streaming`` at
    ``ADSTUDIO_RENDER_LOUDNESS_LUFS``."""
    preset = PRESETS[RenderPreset(name).value]
    if preset.name == STREAMING:
        preset = replace(preset, loudness_lufs=settings.ADSTUDIO_RENDER_LOUDNESS_LUFS)
    return preset


def _failed(claim: Claim, error: str) -> Render:
    """The fenced failure: written only while the claim holds; ``ClaimLost`` otherwise."""
    if not _held(claim).update(
        status=RenderStatus.FAILED, error=error, lease_expires_at=None, finished_at=Now()
    ):
        raise ClaimLost
    observability.render_finished(RenderStatus.FAILED)
    files.prune(claim.render_id, below=claim.token + 1)
    return Render.objects.get(pk=claim.render_id)


def finite(value):
    """``value`` with every float JSON cannot carry (NaN, infinities) made None: a silent
    mix measures -inf LUFS."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite(item) for item in value]
    return value
