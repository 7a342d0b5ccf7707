"""Scratch tracks asked for: which versions a render is of, one render per combination
(asked twice, made once), its task sent, and the authorised, expiring link to its audio.
The task's work is ``renders.making``; the sweep that sends lost renders again,
``renders.recover``."""

from __future__ import annotations

import contextlib
import logging
import uuid
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.db import DatabaseError, IntegrityError, transaction
from django.db.models import Q
from django.db.models.functions import Now
from django.utils.text import slugify

from adstudio.celery import app as celery_app
from adstudio.refusals import StateConflict
from drafts.models import Ad, Draft, DraftKind, DraftStatus
from renders import files
from renders.cast_lines import cast_lines, cast_of
from renders.models import FILE_FIELDS, Render, RenderPreset, RenderStatus
from speech.music_reading import composes
from speech.reading import Estimate, estimate
from workspaces.access import may, require
from workspaces.roles import Action

logger = logging.getLogger(__name__)

RENDER_TASK = "renders.tasks.render_scratch_track"
LATEST, ACTIVE = "latest", "active"
_LINK_SALT = "renders.audio"


class NoSuchVersion(StateConflict):
    """A version asked for that the ad does not have."""

    code = "no_such_version"


class SpeechOverCap(StateConflict):
    """Reading the render's lines would cost more than its workspace allows one render."""

    code = "speech_cost_over_cap"


class NothingToRender(StateConflict):
    """No voices, music or effects: a scratch track of nothing would be silence."""

    code = "nothing_to_render"


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


def render_request(
    *,
    ad: Ad,
    versions: dict[str, Draft | None],
    preset: str = RenderPreset.STREAMING,
    user=None,
) -> tuple[Render, bool]:
    """The render of these versions at ``preset``: the one made or being made, or a new one
    queued (its task sent when the row is committed). A failed one, or one whose lease ran out (its
    worker died), is queued again. ``(render, queued)``; ``NothingToRender`` when every
    kind is left out.

    An archived ad renders too: a scratch track changes nothing of the ad, and it is how
    someone hears what the ad was."""
    fields = {kind: versions.get(kind) for kind in DraftKind.values}
    if not _sounds_in(fields):
        raise NothingToRender(
            "There is nothing to render: the ad has no voices, music or sound effects in "
            "the versions asked for."
        )
    existing = render_of(ad, fields, preset=preset)
    if existing is None or existing.status == RenderStatus.FAILED:
        _speech_allowed(ad, fields, user)
    with transaction.atomic():
        render = render_of(ad, fields, preset=preset)
        if render is None:
            try:
                with transaction.atomic():
                    render = Render.objects.create(
                        ad=ad, requested_by=user, enqueued_at=Now(), preset=preset, **fields
                    )
            except IntegrityError:  # asked for at the same moment by another request
                return render_of(ad, fields, preset=preset), False
        elif not _requeued(render):
            return render, False
        render_enqueue(render.pk)
    render.refresh_from_db()
    return render, True


@dataclass(frozen=True)
class SpeechQuote:
    """What a render of these versions would cost in speech now, and the workspace's cap."""

    estimate: Estimate
    cap_usd: Decimal
    composes_music: bool  # the music's provider would compose it (no price: not counted)

    @property
    def billed(self) -> bool:
        """Whether a provider would bill for it: lines read, or music composed."""
        return bool(self.estimate.characters) or self.composes_music

    @property
    def within_cap(self) -> bool:
        return self.estimate.cost_usd <= self.cap_usd

    def as_json(self) -> dict:
        return {
            **self.estimate.as_json(),
            "capUsd": str(self.cap_usd),
            "withinCap": self.within_cap,
            "composesMusic": self.composes_music,
        }


def speech_cap(ad: Ad) -> Decimal:
    """The most one render of ``ad`` may cost in speech: its workspace's cap, else the
    setting's."""
    cap = ad.workspace.speech_cost_cap_usd
    if cap is None:
        cap = Decimal(str(settings.ADSTUDIO_SPEECH_COST_CAP_USD))
    return Decimal(cap)


def render_quote(*, ad: Ad, versions: dict[str, Draft | None]) -> SpeechQuote:
    """The speech cost of rendering ``versions`` now: the lines not cached that a
    configured provider would read, at the price table (``speech.reading.estimate``)."""
    voices, music = versions.get("voices"), versions.get("music")
    payload = voices.payload if voices else None
    lines = cast_lines(payload, language=ad.language, cast=cast_of(payload))
    return SpeechQuote(estimate(lines), speech_cap(ad), composes(music.payload if music else None))


def _speech_allowed(ad: Ad, fields: dict[str, Draft | None], user) -> None:
    """Refused when a provider would read lines or compose the music (billed) and
    ``user``'s role does not allow it (``ActionNotAllowed``), or when the lines would cost
    more than the cap
    (``SpeechOverCap``). Priced before the transaction: it reads the cache in storage,
    which no row lock should wait on. ``user`` None: the product's own request."""
    quote = render_quote(ad=ad, versions=fields)
    if quote.billed and user is not None:
        require(user, ad.workspace_id, Action.RENDER_VOICES)
    if not quote.within_cap:
        raise SpeechOverCap(
            f"Reading this render's lines would cost ${quote.estimate.cost_usd} "
            f"({quote.estimate.characters} characters), over the workspace's cap of "
            f"${quote.cap_usd} a render: shorten the lines, cast voices of another provider, "
            "or ask a workspace admin to raise the cap."
        )


def _sounds_in(fields: dict[str, Draft | None]) -> bool:
    """Whether these versions hold anything to hear: a voice track, the music, an effect
    (an empty sound-effects version is a valid draft, and silent)."""
    voices, music, sfx = (fields.get(kind) for kind in ("voices", "music", "sfx"))
    return bool(
        (voices and voices.payload.get("voiceTracks"))
        or music
        or (sfx and sfx.payload.get("soundFxPrompts"))
    )


def _requeued(render: Render) -> bool:
    """Queue a failed render again, or one whose lease ran out (its worker died and no
    sweep has sent it yet: the embedded default has no sweep). One statement decides, so
    two requests at once queue it once; a person asking starts its reclaim count again."""
    again = Q(status=RenderStatus.FAILED) | Q(
        status=RenderStatus.RENDERING, lease_expires_at__lt=Now()
    )
    return bool(
        Render.objects.filter(again, pk=render.pk).update(
            status=RenderStatus.QUEUED,
            error="",
            lease_expires_at=None,
            reclaims=0,
            enqueued_at=Now(),
        )
    )


def render_enqueue(render_id: uuid.UUID) -> None:
    """Send the render's task once the current transaction commits. A broker that cannot
    take it leaves the render queued and marked unsent, for the recovery sweep to send at
    its next pass; the caller's request does not fail."""

    def send() -> None:
        try:
            celery_app.tasks[RENDER_TASK].delay(str(render_id))
        except Exception as exc:
            logger.warning("could not enqueue render %s: %s", render_id, exc)
            # Unreachable too: sent again once it has waited ADSTUDIO_RENDER_STALE_AFTER.
            with contextlib.suppress(DatabaseError):
                Render.objects.filter(pk=render_id, status=RenderStatus.QUEUED).update(
                    enqueued_at=None
                )

    transaction.on_commit(send)


def render_of(
    ad: Ad, fields: dict[str, Draft | None], *, preset: str = RenderPreset.STREAMING
) -> Render | None:
    """The render of exactly these versions at ``preset``, if one was asked for."""
    lookup: dict[str, object] = {"preset": preset}
    for kind, draft in fields.items():
        if draft is None:
            lookup[f"{kind}__isnull"] = True
        else:
            lookup[kind] = draft
    return Render.objects.filter(ad=ad, **lookup).first()


def render_requeue_missing(render: Render, name: str) -> bool:
    """A done render whose file ``name`` storage does not have (lost, or removed by hand):
    queued again to be made anew, once however many requests find it missing. Whether
    this call queued it."""
    with transaction.atomic():
        named = Q()
        for field in FILE_FIELDS.values():
            named |= Q(**{field: name})
        requeued = Render.objects.filter(named, pk=render.pk, status=RenderStatus.DONE).update(
            status=RenderStatus.QUEUED,
            **dict.fromkeys(FILE_FIELDS.values(), ""),
            reclaims=0,
            finished_at=None,
            enqueued_at=Now(),
        )
        if requeued:
            logger.warning("render %s: %s is missing from storage; queued again", render.pk, name)
            render_enqueue(render.pk)
    if requeued:
        files.prune(render.pk, below=render.claims + 1)
    return bool(requeued)


def download_name(render: Render, fmt: str) -> str:
    """A file name a person recognises: the ad's title, the versions and a preset other
    than streaming, e.g. ``spotify-premium-family-plan_voices-v2_music-v1_no-sfx.ogg``,
    ``..._no-sfx_broadcast_voices-stem.wav`` for a stem."""
    title = slugify(render.ad.title)[:60] or "ad"
    parts = [
        f"{kind}-v{draft.version}" if draft else f"no-{kind}"
        for kind, draft in (("voices", render.voices), ("music", render.music), ("sfx", render.sfx))
    ]
    if render.preset != RenderPreset.STREAMING:
        parts.append(render.preset)
    stem, _, extension = fmt.rpartition(".")
    if stem:
        parts.append(f"{stem}-stem")
    return f"{title}_{'_'.join(parts)}.{extension}"


def audio_link_token(render: Render, *, user, fmt: str) -> str:
    """A token for the render's audio as ``fmt`` (one of ``files.FORMATS``), valid for
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
    if claims.get("format") not in files.FORMATS:
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
