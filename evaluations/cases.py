"""What a golden case asks of the director (``CaseInput``) and what one run of it produced
(``AdOutcome``): the scorers read the outcome alone, so each can be tried against a
hand-made good or bad one without a database.

The golden sets (``evals/*.yaml``) are pydantic-evals datasets of these inputs; loading
one validates every case against these models (``extra="forbid"``: a misspelt field is
an error naming it, not a case that silently checks less).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from drafts.models import DraftKind

KINDS = tuple(DraftKind)  # voices, music, sfx


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Brief(_Strict):
    """The brief as the web client sends it (drafts.api.BriefSerializer's fields)."""

    clientDescription: str = Field(min_length=1, max_length=2000)
    targetAudience: str = Field(default="", max_length=2000)
    durationSeconds: int = Field(ge=5, le=120)
    market: str = Field(default="", max_length=64)
    language: str = Field(min_length=1, max_length=64)
    additionalContext: str = Field(default="", max_length=4000)


# How a refinement's change is checked, for the kind it asks to change.
Direction = Literal[
    "music_more_upbeat",  # the new music prompt names a livelier mood or a faster tempo
    "music_calmer",  # ... a calmer one
    "script_shorter",  # the new script is shorter than the one before
    "script_longer",
    "female_voice_swapped",  # a female voice of the script is replaced by another voice
    "male_voice_swapped",
    "no_sound_effects",  # the new sound effects version has none
]


class Refinement(_Strict):
    """A follow-up turn after the first: what the person says, which kinds must get a new
    version (every other kind must not), and in which direction."""

    message: str = Field(min_length=1, max_length=4000)
    changes: list[DraftKind] = Field(min_length=1)
    direction: Direction


class CaseInput(_Strict):
    brief: Brief
    # Absent: a first-turn case (the brief, then one turn that drafts the ad).
    refinement: Refinement | None = None


class CaseMetadata(_Strict):
    tone: str = ""
    # A staff member's note when the case was taken from a real conversation.
    source: str = ""


class VoiceFacts(_Strict):
    """A voice the script names, as the catalogue holds it when the run is scored."""

    language: str
    locale: str = ""
    gender: str = ""


class TurnOutcome(_Strict):
    """One turn's run: how it ended, what it wrote, what it cost."""

    run_id: str
    status: str
    error_code: str = ""
    new_versions: dict[str, list[int]] = Field(default_factory=dict)  # kind -> versions
    tool_calls: int = 0
    tool_errors: int = 0
    argument_repairs: int = 0
    rounds: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0


class AdOutcome(_Strict):
    """What one case's runs left behind, read back from the database."""

    ad_id: str = ""
    conversation_id: str = ""
    language: str  # the ad's canonical language code
    market: str = ""
    duration_s: int
    # Each kind's latest payload after the first turn, and after the last (the same for
    # a first-turn case); a kind never drafted is absent.
    first_drafts: dict[str, dict] = Field(default_factory=dict)
    drafts: dict[str, dict] = Field(default_factory=dict)
    turns: list[TurnOutcome] = Field(default_factory=list)
    voices: dict[str, VoiceFacts] = Field(default_factory=dict)  # by the script's voiceId
    # The locales the catalogue has voices of in the ad's language (the locale check asks
    # for the market's locale only where the catalogue has it).
    catalogue_locales: list[str] = Field(default_factory=list)
    # Where the speech of the final mix ended in a scratch track of it (``--render``).
    measured_speech_s: float | None = None
