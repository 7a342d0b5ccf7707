"""The scorers of an audio ad: deterministic checks of a case's outcome (``AdOutcome``),
each a pass/fail with its reason or a number, as pydantic-evals evaluators.

A scorer that does not apply to a case (a refinement check on a first-turn case) returns
no result rather than a pass, so a report's pass rate counts only what was checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic_evals.evaluators import EvaluationReason, Evaluator, EvaluatorContext

from adstudio.speech import spoken_seconds
from audio.timeline import estimated_script_seconds, timeline
from evaluations.cases import KINDS, AdOutcome, CaseInput, CaseMetadata
from evaluations.script_language import script_language

Context = EvaluatorContext[CaseInput, AdOutcome, CaseMetadata]
NOT_APPLICABLE: dict[str, Any] = {}  # pydantic-evals records no result for an empty mapping


def _passed(ok: bool, reason: str) -> EvaluationReason:
    return EvaluationReason(value=ok, reason=reason)


def _script_text(voices: dict) -> str:
    return " ".join(t["text"] for t in voices.get("voiceTracks", []))


@dataclass
class AllKindsDrafted(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """Voices, music and sound effects: an ad needs all three."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        missing = [kind for kind in KINDS if kind not in ctx.output.drafts]
        if missing:
            return _passed(False, f"no {', '.join(missing)} draft")
        return _passed(True, "voices, music and sfx drafted")


@dataclass
class RunsSucceeded(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """Every turn's run ended succeeded."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        turns = ctx.output.turns
        failed = [
            f"turn {n}: {t.status} {t.error_code}".strip()
            for n, t in enumerate(turns, 1)
            if t.status != "succeeded"
        ]
        if not turns:
            return _passed(False, "no run")
        return _passed(not failed, "; ".join(failed) or f"{len(turns)} of {len(turns)} succeeded")


@dataclass
class CleanToolCalls(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """No tool call refused or failed, and no arguments repaired before they parsed."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        errors = sum(t.tool_errors for t in ctx.output.turns)
        repairs = sum(t.argument_repairs for t in ctx.output.turns)
        calls = sum(t.tool_calls for t in ctx.output.turns)
        reason = f"{calls} tool calls: {errors} errors, {repairs} argument repairs"
        return _passed(errors == 0 and repairs == 0, reason)


@dataclass
class VoicesInLanguage(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """Every voice of the script speaks the ad's language, and the market's locale where
    the catalogue has voices of it (th-TH for a Thai ad in TH; any Spanish voice for a
    market the catalogue has no locale of)."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        out = ctx.output
        voices = out.drafts.get("voices")
        if voices is None:
            return _passed(False, "no voices draft")
        locale = f"{out.language}-{out.market.upper()}" if out.market else ""
        want_locale = locale if locale in out.catalogue_locales else ""
        wrong = []
        for track in voices.get("voiceTracks", []):
            facts = out.voices.get(str(track["voiceId"]))
            if facts is None:
                wrong.append(f"{track['id']}: voice {track['voiceId']} is not in the catalogue")
            elif facts.language != out.language:
                wrong.append(f"{track['id']}: a {facts.language} voice for a {out.language} ad")
            elif want_locale and facts.locale != want_locale:
                wrong.append(f"{track['id']}: {facts.locale or 'no locale'}, not {want_locale}")
        if wrong:
            return _passed(False, "; ".join(wrong))
        return _passed(True, f"every voice speaks {want_locale or out.language}")


@dataclass
class ScriptInLanguage(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """The script is written in the ad's language (py3langid over its lines)."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        voices = ctx.output.drafts.get("voices")
        text = _script_text(voices or {})
        if not text.strip():
            return _passed(False, "no script")
        found, probability = script_language(text)
        reason = f"written in {found} (p={probability:.2f}), the ad is {ctx.output.language}"
        return _passed(found == ctx.output.language, reason)


@dataclass
class ScriptFitsSlot(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """The script's length is between ``low`` and ``high`` of the ad's duration: room for
    the music to open and close, and not a script that runs past the slot. Measured in a
    scratch track of the ad when the evaluation renders one, else estimated as the voice
    tool estimates it (adstudio.speech)."""

    low: float = 0.75
    high: float = 1.0

    def evaluate(self, ctx: Context) -> EvaluationReason:
        out = ctx.output
        voices = out.drafts.get("voices")
        if voices is None:
            return _passed(False, "no voices draft")
        if out.measured_speech_s is not None:  # heard in a scratch track
            seconds, how = round(out.measured_speech_s, 1), "measured"
        else:
            seconds = estimated_script_seconds(voices.get("voiceTracks", []), language=out.language)
            how = "about"
        share = seconds / out.duration_s
        reason = (
            f"{how} {seconds:g} s for a {out.duration_s} s slot ({share:.0%}; "
            f"wanted {self.low:.0%}-{self.high:.0%})"
        )
        return _passed(self.low <= share <= self.high, reason)


_VOCALS = re.compile(r"\b(vocals?|lyrics|singing|singer|sung|choir|rap)\b", re.IGNORECASE)
_NO_VOCALS = re.compile(
    r"\b(no|without|zero)\s+(vocals?|lyrics|singing|singer)\b|\binstrumental\b", re.IGNORECASE
)


@dataclass
class MusicUnderVoice(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """The music is a bed for a voice-over: instrumental (the prompt says so, and asks
    for no vocals), and as long as the ad (within ``tolerance_s``)."""

    tolerance_s: int = 1

    def evaluate(self, ctx: Context) -> dict[str, EvaluationReason]:
        out = ctx.output
        music = out.drafts.get("music")
        if music is None:
            missing = _passed(False, "no music draft")
            return {"music_instrumental": missing, "music_length": missing}
        prompt = music.get("musicPrompt", "")
        asks_vocals = bool(_VOCALS.search(_NO_VOCALS.sub("", prompt)))
        instrumental = bool(_NO_VOCALS.search(prompt)) and not asks_vocals
        reason = (
            "the prompt asks for vocals"
            if asks_vocals
            else "instrumental"
            if instrumental
            else "the prompt does not say instrumental or no vocals"
        )
        duration = int(music.get("duration", 0))
        fits = abs(duration - out.duration_s) <= self.tolerance_s
        return {
            "music_instrumental": _passed(instrumental, reason),
            "music_length": _passed(fits, f"{duration} s of music for a {out.duration_s} s ad"),
        }


@dataclass
class SfxInsideAd(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """Each sound effect is placed inside the ad: after a voice track that exists, and
    ending by the ad's end (an effect at "end" ends with the ad). The placements are
    ``audio.timeline``'s, with the voice tracks' estimated lengths."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        out = ctx.output
        sfx = out.drafts.get("sfx")
        if sfx is None:
            return _passed(False, "no sfx draft")
        voices = out.drafts.get("voices") or {}
        lengths = [
            spoken_seconds(t["text"], language=out.language) for t in voices.get("voiceTracks", [])
        ]
        placed = timeline(
            slot_s=out.duration_s, voices=voices, music=None, sfx=sfx, voice_lengths_s=lengths
        )
        wrong = [w for w in placed.warnings if w.startswith("sfx-")]
        wrong += [
            f"sfx-{n} lasts {fx.get('duration')} s"
            for n, fx in enumerate(sfx.get("soundFxPrompts", []))
            if float(fx.get("duration", 0)) <= 0
        ]
        if wrong:
            return _passed(False, "; ".join(wrong))
        count = len(sfx.get("soundFxPrompts", []))
        return _passed(True, f"{count} effects inside the ad")


@dataclass
class RefinementScope(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """A refinement changes what was asked and nothing else: the asked kinds get a new
    version in the refinement's turn, every other kind none."""

    def evaluate(self, ctx: Context) -> EvaluationReason | dict[str, Any]:
        refinement = ctx.inputs.refinement
        if refinement is None:
            return NOT_APPLICABLE
        if len(ctx.output.turns) < 2:
            return _passed(False, "the refinement's turn did not run")
        changed = {kind for kind, versions in ctx.output.turns[-1].new_versions.items() if versions}
        asked = {str(kind) for kind in refinement.changes}
        missing, extra = sorted(asked - changed), sorted(changed - asked)
        problems = [f"no new {k}" for k in missing] + [f"{k} changed unasked" for k in extra]
        return _passed(not problems, "; ".join(problems) or f"only {', '.join(sorted(asked))}")


_UPBEAT = re.compile(
    r"\b(upbeat|energetic|high-energy|lively|punchy|driving|up-?tempo|fast|bright|festive)\b",
    re.IGNORECASE,
)
_CALM = re.compile(
    r"\b(calm|calmer|mellow|soft|gentle|relaxed|chill|slow|ambient|soothing)\b", re.IGNORECASE
)
_BPM = re.compile(r"(\d{2,3})\s*bpm", re.IGNORECASE)


def _bpm(prompt: str) -> int | None:
    match = _BPM.search(prompt)
    return int(match.group(1)) if match else None


@dataclass
class RefinementDirection(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """The change goes the way the person asked: livelier or calmer music (its mood words,
    or its bpm), a shorter or longer script, a voice of the named gender replaced, no
    sound effects left."""

    def evaluate(self, ctx: Context) -> EvaluationReason | dict[str, Any]:
        refinement = ctx.inputs.refinement
        if refinement is None:
            return NOT_APPLICABLE
        out = ctx.output
        before, after = out.first_drafts, out.drafts
        direction = refinement.direction
        if direction in ("music_more_upbeat", "music_calmer"):
            old = before.get("music", {}).get("musicPrompt", "")
            new = after.get("music", {}).get("musicPrompt", "")
            words = _UPBEAT if direction == "music_more_upbeat" else _CALM
            old_bpm, new_bpm = _bpm(old), _bpm(new)
            faster = old_bpm is not None and new_bpm is not None and new_bpm > old_bpm
            slower = old_bpm is not None and new_bpm is not None and new_bpm < old_bpm
            moved = faster if direction == "music_more_upbeat" else slower
            ok = new != old and (bool(words.search(new)) or moved)
            return _passed(ok, f"music prompt now: {new[:120]!r}")
        if direction in ("script_shorter", "script_longer"):
            old_s = estimated_script_seconds(
                before.get("voices", {}).get("voiceTracks", []), language=out.language
            )
            new_s = estimated_script_seconds(
                after.get("voices", {}).get("voiceTracks", []), language=out.language
            )
            ok = new_s < old_s if direction == "script_shorter" else new_s > old_s
            return _passed(ok, f"script about {old_s:g} s before, {new_s:g} s after")
        if direction in ("female_voice_swapped", "male_voice_swapped"):
            gender = direction.split("_", 1)[0]
            old_ids = {str(t["voiceId"]) for t in before.get("voices", {}).get("voiceTracks", [])}
            new_ids = {str(t["voiceId"]) for t in after.get("voices", {}).get("voiceTracks", [])}
            of_gender = {v for v in old_ids if (f := out.voices.get(v)) and f.gender == gender}
            swapped = of_gender - new_ids
            reason = (
                f"{', '.join(sorted(swapped))} replaced"
                if swapped
                else f"no {gender} voice of the script was replaced"
            )
            return _passed(bool(swapped), reason)
        assert direction == "no_sound_effects", direction
        effects = after.get("sfx", {}).get("soundFxPrompts")
        count = len(effects) if effects is not None else None
        return _passed(count == 0, f"{count if count is not None else 'no'} sound effects left")


@dataclass
class RunCost(Evaluator[CaseInput, AdOutcome, CaseMetadata]):
    """What the case's runs cost: tokens, dollars, seconds of waiting, model rounds."""

    def evaluate(self, ctx: Context) -> dict[str, float]:
        turns = ctx.output.turns
        return {
            "tokens": float(sum(t.prompt_tokens + t.completion_tokens for t in turns)),
            "cost_usd": round(sum(t.cost_usd for t in turns), 6),
            "latency_s": round(sum(t.latency_s for t in turns), 3),
            "rounds": float(sum(t.rounds for t in turns)),
        }


SCORERS: tuple[type[Evaluator], ...] = (
    RunsSucceeded,
    AllKindsDrafted,
    CleanToolCalls,
    VoicesInLanguage,
    ScriptInLanguage,
    ScriptFitsSlot,
    MusicUnderVoice,
    SfxInsideAd,
    RefinementScope,
    RefinementDirection,
    RunCost,
)
