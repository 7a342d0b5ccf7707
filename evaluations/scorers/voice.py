"""The cast: voices that speak the ad's language, are the voices asked for (gender, age,
accent), and, in a refinement, are the same voices where no change of voice was asked."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_evals.evaluators import EvaluationReason

from evaluations.cases import AdOutcome, VoiceAsk, VoiceFacts
from evaluations.scorers.base import NOT_APPLICABLE, Context, Scorer, clip, passed, tracks

AGE_ORDER = {"young": 0, "middle aged": 1, "old": 2}  # the catalogue's ages


@dataclass
class VoicesInLanguage(Scorer):
    """Every voice of the script speaks the ad's language, and the market's locale where
    the catalogue has voices of it (th-TH for a Thai ad in TH; any Spanish voice for a
    market the catalogue has no locale of)."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        out = ctx.output
        voices = out.drafts.get("voices")
        if voices is None:
            return passed(False, "no voices draft")
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
            return passed(False, "; ".join(wrong))
        return passed(True, f"every voice speaks {want_locale or out.language}")


def _ids(payloads: dict[str, dict]) -> list[str]:
    return list(dict.fromkeys(str(t["voiceId"]) for t in tracks(payloads)))


def _describe(voice_id: str, facts: VoiceFacts | None) -> str:
    if facts is None:
        return f"{voice_id} (not in the catalogue)"
    fields = [facts.gender, facts.age, facts.accent or facts.locale]
    return f"{voice_id} ({', '.join(f for f in fields if f) or 'no fields'})"


def _accent_fits(asked: str, facts: VoiceFacts) -> bool:
    """As the voice search reads ``accent=``: the catalogue's accent word or its locale,
    case and ``_``/``-`` aside."""

    def norm(value: str) -> str:
        return value.strip().casefold().replace("_", "-")

    return norm(asked) in {norm(facts.accent), norm(facts.locale)} - {""}


def _misfits(ask: VoiceAsk, facts: VoiceFacts | None, replaced: VoiceFacts | None) -> list[str]:
    """What of ``ask`` the voice is not; a comparative age is read against ``replaced``."""
    if facts is None:
        return ["not in the catalogue"]
    wrong = []
    if ask.gender and facts.gender != ask.gender:
        wrong.append(f"{facts.gender or 'no gender'}, not {ask.gender}")
    if ask.age in AGE_ORDER and facts.age != ask.age:
        wrong.append(f"{facts.age or 'no age'}, not {ask.age}")
    if ask.age in ("younger", "older") and replaced is not None:
        mine, theirs = AGE_ORDER.get(facts.age), AGE_ORDER.get(replaced.age)
        ok = (
            mine is not None
            and theirs is not None
            and (mine < theirs if ask.age == "younger" else mine > theirs)
        )
        if not ok:
            wrong.append(f"{facts.age or 'no age'}, not {ask.age} than {replaced.age or '?'}")
    if ask.accent and not _accent_fits(ask.accent, facts):
        wrong.append(f"{facts.accent or facts.locale or 'no accent'}, not {ask.accent}")
    return wrong


def _replaced_by(before: list[dict], after: list[dict]) -> dict[str, str]:
    """For each voice new in ``after``, the voice that read its line before (the track at
    the same position), where there was one."""
    old_ids = {str(t["voiceId"]) for t in before}
    pairs: dict[str, str] = {}
    for old, new in zip(before, after, strict=False):
        new_id, old_id = str(new["voiceId"]), str(old["voiceId"])
        if new_id not in old_ids and new_id != old_id:
            pairs.setdefault(new_id, old_id)
    return pairs


@dataclass
class VoiceAttributes(Scorer):
    """The cast is the voice asked for, by the catalogue's fields: the brief's ask (a
    voice of the first cast has every asked gender, age and accent), or a refinement's (a
    voice new in its cast has them; "younger"/"older" against the voice whose lines it
    took over)."""

    def evaluate(self, ctx: Context) -> EvaluationReason | dict[str, Any]:
        out, inputs = ctx.output, ctx.inputs
        refined = inputs.refinement.voice if inputs.refinement else None
        problems: list[str] = []
        checked = False
        if inputs.voice is not None and _checkable(inputs.voice, first_turn=True):
            checked = True
            cast = _ids(out.first_drafts)
            if not any(not _misfits(inputs.voice, out.voices.get(v), None) for v in cast):
                problems.append(
                    f"asked {_ask(inputs.voice)}; no voice of the first cast is: "
                    + ", ".join(_describe(v, out.voices.get(v)) for v in cast)
                )
        if refined is not None and _checkable(refined, first_turn=False):
            checked = True
            problems += _refined_problems(refined, out)
        if not checked:
            return NOT_APPLICABLE
        if problems:
            return passed(False, "; ".join(problems))
        return passed(
            True, "cast: " + ", ".join(_describe(v, out.voices.get(v)) for v in _ids(out.drafts))
        )


def _checkable(ask: VoiceAsk, *, first_turn: bool) -> bool:
    comparative = ask.age in ("younger", "older")
    return bool(ask.gender or ask.accent or (ask.age and not (comparative and first_turn)))


def _ask(ask: VoiceAsk) -> str:
    return " ".join(x for x in (ask.age, ask.gender, ask.accent) if x) + " voice"


def _refined_problems(ask: VoiceAsk, out: AdOutcome) -> list[str]:
    before, after = tracks(out.first_drafts), tracks(out.drafts)
    new = [v for v in _ids(out.drafts) if v not in set(_ids(out.first_drafts))]
    if not new:
        return [f"asked {_ask(ask)}; no new voice was cast"]
    pairs = _replaced_by(before, after)
    fits = []
    misfits = []
    for voice_id in new:
        replaced_id = pairs.get(voice_id)
        replaced = out.voices.get(replaced_id) if replaced_id else None
        wrong = _misfits(ask, out.voices.get(voice_id), replaced)
        (misfits if wrong else fits).append(f"{voice_id}: {', '.join(wrong)}")
    if fits:
        return []
    return [f"asked {_ask(ask)}; " + "; ".join(misfits)]


@dataclass
class VoicesKept(Scorer):
    """In a refinement that made a new voices version, the voices the person did not ask
    to change are the same: no voice of the script is replaced unless it was asked
    (``*_voice_swapped`` replaces the voices of that gender; a voice ask, one voice), and
    a line kept word for word keeps its reader."""

    def evaluate(self, ctx: Context) -> EvaluationReason | dict[str, Any]:
        refinement, out = ctx.inputs.refinement, ctx.output
        before, after = tracks(out.first_drafts), tracks(out.drafts)
        if refinement is None or not before or not after or before == after:
            return NOT_APPLICABLE
        old_ids, new_ids = _ids(out.first_drafts), set(_ids(out.drafts))
        may_change: set[str] = set()
        allowance = 0
        if refinement.direction in ("female_voice_swapped", "male_voice_swapped"):
            gender = refinement.direction.split("_", 1)[0]
            may_change = {v for v in old_ids if (f := out.voices.get(v)) and f.gender == gender}
        elif refinement.voice is not None:
            allowance = 1  # the voice the ask is about
        gone = [v for v in old_ids if v not in new_ids and v not in may_change]
        problems = [
            f"{_describe(v, out.voices.get(v))} was replaced, and no change of it was asked"
            for v in gone[allowance:]
        ]
        readers = {str(t.get("text", "")): str(t["voiceId"]) for t in before}
        for track in after:
            old_reader = readers.get(str(track.get("text", "")))
            new_reader = str(track["voiceId"])
            if old_reader and old_reader != new_reader and old_reader in new_ids:
                problems.append(
                    f"{track.get('id')} ({clip(str(track.get('text', '')), 40)!r}) was read by "
                    f"{old_reader}, now by {new_reader}"
                )
        if problems:
            return passed(False, "; ".join(problems))
        kept = [v for v in old_ids if v in new_ids]
        return passed(
            True, f"kept {', '.join(kept)}" if kept else "every voice was asked to change"
        )
