"""A refinement's turn: it changed what was asked and nothing else, the way it was asked
(livelier or calmer music, a shorter or longer script, a voice swapped, no effects), and
to the slot it asked for."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_evals.evaluators import EvaluationReason

from audio.timeline import estimated_script_seconds
from evaluations import intent_words as words
from evaluations.cases import CaseInput
from evaluations.scorers.base import NOT_APPLICABLE, Context, Scorer, clip, passed, tracks

# With no tempo in the prompt before, a tempo that is no livelier (calmer) than these.
SLOW_BPM = 90  # an "upbeat" prompt at or below this is not upbeat
FAST_BPM = 120  # a "calmer" prompt at or above this is not calmer


@dataclass
class RefinementScope(Scorer):
    """A refinement changes what was asked and nothing else: the asked kinds get a new
    version in the refinement's turn, every other kind none."""

    def evaluate(self, ctx: Context) -> EvaluationReason | dict[str, Any]:
        refinement = ctx.inputs.refinement
        if refinement is None:
            return NOT_APPLICABLE
        if len(ctx.output.turns) < 2:
            return passed(False, "the refinement's turn did not run")
        changed = {kind for kind, versions in ctx.output.turns[-1].new_versions.items() if versions}
        asked = {str(kind) for kind in refinement.changes}
        missing, extra = sorted(asked - changed), sorted(changed - asked)
        problems = [f"no new {k}" for k in missing] + [f"{k} changed unasked" for k in extra]
        return passed(not problems, "; ".join(problems) or f"only {', '.join(sorted(asked))}")


def _brief_text(inputs: CaseInput) -> str:
    brief = inputs.brief
    return " ".join((brief.clientDescription, brief.targetAudience, brief.additionalContext))


def music_direction(old: str, new: str, *, calmer: bool, brief: str = "") -> tuple[bool, str]:
    """Whether the music prompt moved from ``old`` to ``new`` the asked way, and why.

    Read from the change: a bpm that moved the other way vetoes; a bpm that moved the
    asked way counts; so does a mood word of the asked kind that the new prompt affirms
    and neither the old prompt nor the brief had (a word copied along is no change), or
    one of the other kind it negates ("not energetic" for calmer). A new mood word of the
    other kind, or a negated one of the asked kind, is a change the wrong way."""
    if new.strip() == old.strip():
        return False, "the music prompt did not change"
    asked, other = (words.CALM, words.UPBEAT) if calmer else (words.UPBEAT, words.CALM)
    way = "calmer" if calmer else "livelier"
    old_bpm, new_bpm = words.bpm(old), words.bpm(new)
    if old_bpm is not None and new_bpm is not None and new_bpm != old_bpm:
        if (new_bpm < old_bpm) != calmer:
            return False, f"asked {way}, but the tempo went from {old_bpm} to {new_bpm} bpm"
    elif (
        old_bpm is None
        and new_bpm is not None
        and ((calmer and new_bpm >= FAST_BPM) or (not calmer and new_bpm <= SLOW_BPM))
    ):
        return False, f"asked {way}, but the new prompt is at {new_bpm} bpm"
    seen = words.affirmed(asked, old) | words.affirmed(asked, brief, skip_people=True)
    for_words = (words.affirmed(asked, new, skip_people=True) - seen) | {
        f"not {w}" for w in words.negated(other, new) - words.negated(other, old)
    }
    seen_other = words.affirmed(other, old) | words.affirmed(other, brief, skip_people=True)
    against = (words.affirmed(other, new, skip_people=True) - seen_other) | {
        f"not {w}" for w in words.negated(asked, new) - words.negated(asked, old)
    }
    if against:
        return False, f"asked {way}, but the new prompt says {', '.join(sorted(against))}"
    moved = old_bpm is not None and new_bpm is not None and (new_bpm < old_bpm) == calmer
    moved = moved and new_bpm != old_bpm
    if not (moved or for_words):
        return False, f"asked {way}, but nothing new in the prompt says so: {clip(new, 100)!r}"
    evidence = ([f"{old_bpm} -> {new_bpm} bpm"] if moved else []) + sorted(for_words)
    return True, f"{way}: {', '.join(evidence)}"


@dataclass
class RefinementDirection(Scorer):
    """The change goes the way the person asked (``music_direction`` for the music; a
    shorter or longer script by the estimate, each track at its speed; a voice of the
    named gender replaced; no sound effects left). No direction: not applicable."""

    def evaluate(self, ctx: Context) -> EvaluationReason | dict[str, Any]:
        refinement = ctx.inputs.refinement
        if refinement is None or refinement.direction is None:
            return NOT_APPLICABLE
        out = ctx.output
        before, after = out.first_drafts, out.drafts
        direction = refinement.direction
        if direction in ("music_more_upbeat", "music_calmer"):
            ok, reason = music_direction(
                str(before.get("music", {}).get("musicPrompt", "")),
                str(after.get("music", {}).get("musicPrompt", "")),
                calmer=direction == "music_calmer",
                brief=_brief_text(ctx.inputs),
            )
            return passed(ok, reason)
        if direction in ("script_shorter", "script_longer"):
            old_s = estimated_script_seconds(tracks(before), language=out.language)
            new_s = estimated_script_seconds(tracks(after), language=out.language)
            ok = new_s < old_s if direction == "script_shorter" else new_s > old_s
            return passed(ok, f"script about {old_s:g} s before, {new_s:g} s after")
        if direction in ("female_voice_swapped", "male_voice_swapped"):
            gender = direction.split("_", 1)[0]
            old_ids = {str(t["voiceId"]) for t in tracks(before)}
            new_ids = {str(t["voiceId"]) for t in tracks(after)}
            of_gender = {v for v in old_ids if (f := out.voices.get(v)) and f.gender == gender}
            swapped = of_gender - new_ids
            reason = (
                f"{', '.join(sorted(swapped))} replaced"
                if swapped
                else f"no {gender} voice of the script was replaced"
            )
            return passed(bool(swapped), reason)
        assert direction == "no_sound_effects", direction
        effects = after.get("sfx", {}).get("soundFxPrompts")
        count = len(effects) if effects is not None else None
        return passed(count == 0, f"{count if count is not None else 'no'} sound effects left")


@dataclass
class SlotChanged(Scorer):
    """A refinement that asks for another length (``durationSeconds``) leaves the ad at
    that slot: the ad's ``durationSeconds`` after it is the one asked. The scorers of
    length (``ScriptFitsSlot``, ``music_length``) then read the new slot."""

    def evaluate(self, ctx: Context) -> EvaluationReason | dict[str, Any]:
        refinement = ctx.inputs.refinement
        if refinement is None or refinement.durationSeconds is None:
            return NOT_APPLICABLE
        out = ctx.output
        before = out.first_duration_s if out.first_duration_s is not None else out.duration_s
        asked = refinement.durationSeconds
        reason = f"asked {asked} s; the ad is {out.duration_s} s (was {before} s)"
        return passed(out.duration_s == asked, reason)
