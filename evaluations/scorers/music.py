"""The music: a bed for a voice-over, so instrumental, and as long as the ad."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic_evals.evaluators import EvaluationReason

from evaluations.intent_words import says_instrumental, vocals_asked
from evaluations.scorers.base import Context, Scorer, passed


@dataclass
class MusicUnderVoice(Scorer):
    """The music is a bed for a voice-over: instrumental (the prompt says so, or asks for
    no vocals, and names no voice singing: ``evaluations.intent_words``), and as long as
    the ad (within ``tolerance_s``)."""

    tolerance_s: int = 1

    def evaluate(self, ctx: Context) -> dict[str, EvaluationReason]:
        out = ctx.output
        music = out.drafts.get("music")
        if music is None:
            missing = passed(False, "no music draft")
            return {"music_instrumental": missing, "music_length": missing}
        prompt = str(music.get("musicPrompt", ""))
        vocals = vocals_asked(prompt)
        instrumental = says_instrumental(prompt) and not vocals
        reason = (
            f"the prompt asks for vocals ({', '.join(dict.fromkeys(vocals))})"
            if vocals
            else "instrumental"
            if instrumental
            else "the prompt does not say instrumental or no vocals"
        )
        duration = int(music.get("duration", 0))
        fits = abs(duration - out.duration_s) <= self.tolerance_s
        return {
            "music_instrumental": passed(instrumental, reason),
            "music_length": passed(fits, f"{duration} s of music for a {out.duration_s} s ad"),
        }
