"""The scorers of an audio ad: deterministic checks of a case's outcome (``AdOutcome``),
each a pass/fail with its reason or a number, as pydantic-evals evaluators. ``SCORERS``
is the one list a golden set is scored with.

By what they look at: the runs (``run``), the script (``script``), the cast (``voice``),
the music (``music``), the sound effects (``sfx``), a refinement's change
(``refinement``). A scorer that does not apply to a case (a refinement check on a
first-turn case, a mention check where nothing was asked to be said) returns no result
(``NOT_APPLICABLE``) rather than a pass, so a report's pass rate counts only what was
checked.
"""

from __future__ import annotations

from pydantic_evals.evaluators import Evaluator

from evaluations.scorers.base import NOT_APPLICABLE, Context
from evaluations.scorers.music import MusicUnderVoice
from evaluations.scorers.refinement import RefinementDirection, RefinementScope, SlotChanged
from evaluations.scorers.run import AllKindsDrafted, CleanToolCalls, RunCost, RunsSucceeded
from evaluations.scorers.script import Mentions, ScriptFitsSlot, ScriptInLanguage
from evaluations.scorers.sfx import SfxInsideAd, SfxUnderSpeech
from evaluations.scorers.voice import VoiceAttributes, VoicesInLanguage, VoicesKept

SCORERS: tuple[type[Evaluator], ...] = (
    RunsSucceeded,
    AllKindsDrafted,
    CleanToolCalls,
    VoicesInLanguage,
    VoiceAttributes,
    ScriptInLanguage,
    ScriptFitsSlot,
    Mentions,
    MusicUnderVoice,
    SfxInsideAd,
    SfxUnderSpeech,
    RefinementScope,
    RefinementDirection,
    VoicesKept,
    SlotChanged,
    RunCost,
)

__all__ = [
    "NOT_APPLICABLE",
    "SCORERS",
    "AllKindsDrafted",
    "CleanToolCalls",
    "Context",
    "Mentions",
    "MusicUnderVoice",
    "RefinementDirection",
    "RefinementScope",
    "RunCost",
    "RunsSucceeded",
    "ScriptFitsSlot",
    "ScriptInLanguage",
    "SfxInsideAd",
    "SfxUnderSpeech",
    "SlotChanged",
    "VoiceAttributes",
    "VoicesInLanguage",
    "VoicesKept",
]
