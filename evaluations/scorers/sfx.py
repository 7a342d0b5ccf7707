"""The sound effects: placed as the design allows (docs/api.md, "Draft payloads": at the
start, at the end, or after a voice track that exists), inside the ad, short beside the
slot, and not drowning the speech."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_evals.evaluators import EvaluationReason

from audio.timeline import Segment, estimated_track_seconds, timeline
from drafts.payloads import DEFAULT_SFX_SECONDS
from evaluations.cases import AdOutcome
from evaluations.scorers.base import NOT_APPLICABLE, Context, Scorer, clip, passed, tracks

PLACEMENTS = ("start", "end", "afterVoice")
DEFAULT_PLACEMENT = "end"  # the design's, for an effect without one


def _placement_problem(n: int, effect: dict) -> str | None:
    """Why an effect's placement is not one the design has, or None."""
    placement = effect.get("placement")
    if placement is None:
        return None
    if not isinstance(placement, dict):
        return f"sfx-{n} has placement {placement!r}, not an object with a type"
    kind = placement.get("type", DEFAULT_PLACEMENT)
    if kind not in PLACEMENTS:
        return f"sfx-{n} has placement type {kind!r}, not one of {', '.join(PLACEMENTS)}"
    index = placement.get("index")
    if kind == "afterVoice" and (not isinstance(index, int) or isinstance(index, bool)):
        return f"sfx-{n} is placed afterVoice with index {index!r}, not a track number"
    return None


def _seconds(effect: dict) -> float:
    try:
        return float(effect.get("duration", DEFAULT_SFX_SECONDS))
    except (TypeError, ValueError):
        return 0.0


@dataclass(frozen=True)
class _Placed:
    problems: list[str]
    voices: list[Segment]
    effects: dict[int, Segment]  # by the effect's index in the draft


def _placed(out: AdOutcome) -> _Placed:
    """The ad's timeline with the estimated voice lengths (each track at its speed), the
    effects with a placement of the design's vocabulary placed, the others named."""
    sfx = out.drafts.get("sfx") or {}
    effects = list(sfx.get("soundFxPrompts", []))
    problems = [p for n, fx in enumerate(effects) if (p := _placement_problem(n, fx))]
    valid = [n for n, fx in enumerate(effects) if not _placement_problem(n, fx)]
    voice_tracks = tracks(out.drafts)
    lengths = [estimated_track_seconds(t, language=out.language) for t in voice_tracks]
    try:
        placed = timeline(
            slot_s=out.duration_s,
            voices=out.drafts.get("voices"),
            music=None,
            sfx={"soundFxPrompts": [effects[n] for n in valid]},
            voice_lengths_s=lengths,
        )
    except ValueError as exc:  # a voice track that follows no track
        return _Placed([*problems, str(exc)], [], {})
    # The timeline names the effects it was given by their place in that list.
    renamed = {f"sfx-{k}": f"sfx-{n}" for k, n in enumerate(valid)}
    for warning in placed.warnings:
        head, _, rest = warning.partition(" ")
        if head in renamed:
            problems.append(f"{renamed[head]} {rest}")
    voices = [s for s in placed.segments if s.kind == "voice"]
    by_ref = {s.ref: s for s in placed.segments if s.kind == "sfx"}
    placed_effects = {n: by_ref[f"sfx-{k}"] for k, n in enumerate(valid) if f"sfx-{k}" in by_ref}
    return _Placed(problems, voices, placed_effects)


@dataclass
class SfxInsideAd(Scorer):
    """Each sound effect has a placement of the design's vocabulary (``start``, ``end``,
    or ``afterVoice`` with an int index of a voice track; none at all is the design's
    ``end``), ends by the ad's end, lasts more than 0 s and at most ``max_share`` of the
    slot (a 30 s siren is not an effect)."""

    max_share: float = 0.5

    def evaluate(self, ctx: Context) -> EvaluationReason:
        out = ctx.output
        sfx = out.drafts.get("sfx")
        if sfx is None:
            return passed(False, "no sfx draft")
        effects = sfx.get("soundFxPrompts", [])
        wrong = _placed(out).problems
        for n, fx in enumerate(effects):
            seconds, what = _seconds(fx), clip(str(fx.get("description", "")), 40)
            if seconds <= 0:
                wrong.append(f"sfx-{n} lasts {fx.get('duration')} s")
            elif seconds > self.max_share * out.duration_s:
                wrong.append(
                    f"sfx-{n} ({what!r}) lasts {seconds:g} s, more than "
                    f"{self.max_share:.0%} of the {out.duration_s} s slot"
                )
        if wrong:
            return passed(False, "; ".join(wrong))
        return passed(True, f"{len(effects)} effects inside the ad")


def _under(effect: Segment, speech: list[Segment]) -> float:
    """Seconds of ``effect`` during which someone speaks (overlapping lines once)."""
    spans = sorted((max(s.start_s, effect.start_s), min(s.end_s, effect.end_s)) for s in speech)
    total, reached = 0.0, effect.start_s
    for start, end in spans:
        start = max(start, reached)
        if end > start:
            total += end - start
            reached = end
    return total


@dataclass
class SfxUnderSpeech(Scorer):
    """No sound effect plays under the speech for long: an effect is heard over a line
    for at most ``max_s`` seconds and under at most ``max_share`` of the speech (a chime
    as the first line starts is fine; a crowd under a whole line is not). Shorter
    overlaps pass and are named in the reason."""

    max_s: float = 3.0
    max_share: float = 0.5

    def evaluate(self, ctx: Context) -> EvaluationReason | dict[str, Any]:
        out = ctx.output
        placed = _placed(out)
        if not placed.effects or not placed.voices:
            return NOT_APPLICABLE
        speech_s = _under(Segment("all", "", 0.0, float("inf")), placed.voices)
        long, short = [], []
        for n, effect in sorted(placed.effects.items()):
            under = _under(effect, placed.voices)
            if under <= 0.05:
                continue
            lines = [
                v.ref
                for v in placed.voices
                if v.start_s < effect.end_s and effect.start_s < v.end_s
            ]
            said = (
                f"sfx-{n} ({clip(effect.label, 40)!r}) plays {under:.1f} s under {', '.join(lines)}"
            )
            if under > self.max_s or under > self.max_share * speech_s:
                long.append(said)
            else:
                short.append(said)
        if long:
            return passed(False, "; ".join(long))
        return passed(True, "; ".join(short) or "no effect plays under the speech")
