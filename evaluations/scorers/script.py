"""The script: in the ad's language line by line (and in the market's Chinese script),
as long as the slot allows, and saying what the brief asked it to say."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic_evals.evaluators import EvaluationReason

from audio.timeline import estimated_script_seconds
from evaluations.chinese_script import expected_script, other_script_characters
from evaluations.mentions import said
from evaluations.scorers.base import (
    NOT_APPLICABLE,
    Context,
    Scorer,
    clip,
    passed,
    script_text,
    tracks,
)
from evaluations.script_language import line_verdicts, script_language


@dataclass
class ScriptInLanguage(Scorer):
    """Every line of the script is in the ad's language: each voice track judged on its
    own (``evaluations.script_language``), a short or brand-only line not judged; a
    script with no line long enough is judged whole. A Chinese ad is also written in its
    market's script: Traditional for TW, HK and MO, Simplified for CN, SG and MY."""

    def evaluate(self, ctx: Context) -> EvaluationReason:
        out = ctx.output
        lines = [
            (str(t.get("id", n)), str(t.get("text", ""))) for n, t in enumerate(tracks(out.drafts))
        ]
        text = script_text(out.drafts)
        if not text.strip():
            return passed(False, "no script")
        verdicts = line_verdicts(
            lines, language=out.language, brand=ctx.inputs.brief.clientDescription
        )
        judged = [v for v in verdicts if v.judged]
        problems = [v.describe(out.language) for v in judged if not v.in_language]
        if not judged:
            found, probability = script_language(text)
            if found != out.language:
                problems.append(
                    f"written in {found} (p={probability:.2f}), the ad is {out.language}"
                )
        if out.language == "zh" and (script := expected_script(out.market)):
            for ref, line in lines:
                if wrong := other_script_characters(line, script):
                    problems.append(
                        f"{ref} is not in {script} characters for {out.market.upper()}: "
                        f"{''.join(wrong[:8])}"
                    )
        if problems:
            return passed(False, "; ".join(problems))
        skipped = len(verdicts) - len(judged)
        how = f"{len(judged)} of {len(verdicts)} lines judged" if judged else "judged whole"
        note = f", {skipped} too short to judge" if judged and skipped else ""
        return passed(True, f"written in {out.language} ({how}{note})")


@dataclass
class ScriptFitsSlot(Scorer):
    """The script's length is between ``low`` and ``high`` of the ad's duration: room for
    the music to open and close, and not a script that runs past the slot. Measured in a
    scratch track of the ad when the evaluation renders one, else estimated as the voice
    tool estimates it (``audio.timeline.estimated_script_seconds``: each track at its
    speed)."""

    low: float = 0.75
    high: float = 1.0

    def evaluate(self, ctx: Context) -> EvaluationReason:
        out = ctx.output
        voices = out.drafts.get("voices")
        if voices is None:
            return passed(False, "no voices draft")
        if out.measured_speech_s is not None:  # heard in a scratch track
            seconds, how = round(out.measured_speech_s, 1), "measured"
        else:
            seconds = estimated_script_seconds(voices.get("voiceTracks", []), language=out.language)
            how = "about"
        share = seconds / out.duration_s
        speeds = sorted({float(t.get("speed") or 1.0) for t in voices.get("voiceTracks", [])})
        at = "" if speeds in ([], [1.0]) else f" at speed {'/'.join(f'{s:g}' for s in speeds)}"
        reason = (
            f"{how} {seconds:g} s{at} for a {out.duration_s} s slot ({share:.0%}; "
            f"wanted {self.low:.0%}-{self.high:.0%})"
        )
        return passed(self.low <= share <= self.high, reason)


@dataclass
class Mentions(Scorer):
    """The script says the facts it was asked to (``evaluations.mentions``: a brand, a
    price, a URL, a call to action): the brief's in the first turn's script, a
    refinement's in the script after it."""

    def evaluate(self, ctx: Context) -> EvaluationReason | dict[str, Any]:
        out, inputs = ctx.output, ctx.inputs
        asked = [(fact, "first", out.first_drafts) for fact in inputs.mentions]
        if inputs.refinement is not None:
            asked += [(fact, "refined", out.drafts) for fact in inputs.refinement.mentions]
        if not asked:
            return NOT_APPLICABLE
        missing = [
            f"the {which} script does not say {fact!r}"
            for fact, which, drafts in asked
            if not said(fact, script_text(drafts))
        ]
        if missing:
            heard = clip(script_text(out.drafts), 80)
            return passed(False, "; ".join(missing) + f" (script: {heard!r})")
        return passed(True, f"says {', '.join(repr(fact) for fact, _w, _d in asked)}")
