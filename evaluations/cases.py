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
AGES = Literal["young", "middle aged", "old"]  # the catalogue's values (Voice.age)


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


class VoiceAsk(_Strict):
    """What the brief or a refinement asks of the cast."""

    # In search_voices' order: pydantic gives equal Literals one schema, whichever it met first.
    gender: Literal["male", "female"] | None = None
    # "younger"/"older": than the voice(s) it replaces (a refinement's ask).
    age: Literal["young", "middle aged", "old", "younger", "older"] | None = None
    # A locale such as "en-GB", or a catalogue accent word such as "british".
    accent: str | None = Field(default=None, min_length=1, max_length=64)


class Refinement(_Strict):
    """A follow-up turn after the first: what the person says, which kinds must get a new
    version (every other kind must not), and what the change must do. A refinement that
    asks nothing checkable beyond its kinds (no direction, voice, slot or mentions) is
    valid: ``RefinementScope`` still checks it."""

    message: str = Field(min_length=1, max_length=4000)
    changes: list[DraftKind] = Field(min_length=1)
    direction: Direction | None = None
    voice: VoiceAsk | None = None
    durationSeconds: int | None = Field(default=None, ge=5, le=120)  # the slot it asks for
    mentions: list[str] = Field(default_factory=list)  # facts the script must say after it


class CaseInput(_Strict):
    brief: Brief
    # Absent: a first-turn case (the brief, then one turn that drafts the ad).
    refinement: Refinement | None = None
    voice: VoiceAsk | None = None  # what the brief asks of the first cast
    mentions: list[str] = Field(default_factory=list)  # facts the first script must say


class CaseMetadata(_Strict):
    tone: str = ""
    # A staff member's note when the case was taken from a real conversation.
    source: str = ""


class VoiceFacts(_Strict):
    """A voice the script names, as the catalogue holds it when the run is scored."""

    language: str
    locale: str = ""
    gender: str = ""
    age: str = ""  # the catalogue's "young", "middle aged" or "old"
    accent: str = ""  # the catalogue's accent word ("british", "central thai")


class TurnOutcome(_Strict):
    """One turn's run: how it ended, what it wrote, what it cost."""

    run_id: str
    status: str
    error_code: str = ""
    new_versions: dict[str, list[int]] = Field(default_factory=dict)  # kind -> versions
    tool_calls: int = 0
    tool_errors: int = 0
    # Voice searches that matched nothing: not errors of the director's (a market whose
    # locale the catalogue lacks), counted apart.
    empty_searches: int = 0
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
    # The ad's slot after the first turn (None: the same as ``duration_s``): a refinement
    # that asks for another length must change it.
    first_duration_s: int | None = None
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
