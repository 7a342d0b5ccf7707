"""The ``search_voices`` tool: how the model finds voices in the catalogue, which it never
sees whole. A miss comes back with what does exist, so the model can fix its query in one
step.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from adstudio.json_schema import default_unstated
from adstudio.languages import UnknownLanguage, language_name, normalise_language
from adstudio.tools import Tool, ToolArgs, ToolContext, ToolError, ToolOutput
from voices.selectors import (
    DEFAULT_COUNT,
    InvalidSearch,
    catalogue_languages,
    clamp_count,
    search_voices,
    voice_facets,
)


def _extra_not_stated(schema: dict[str, Any]) -> None:
    schema.pop("additionalProperties", None)


class SearchVoicesArgs(ToolArgs):
    # An unknown filter (age, "query") is refused: it names what the search cannot do.
    # The schema does not say so (``additionalProperties: false``, tokens on every call):
    # the refusal does, the one time a model tries.
    model_config = ConfigDict(extra="forbid", json_schema_extra=_extra_not_stated)

    language: str = Field(description="e.g. th, Thai, pt-BR")
    gender: Literal["male", "female"] | None = None
    accent: str | None = Field(default=None, description="e.g. british, en-AU")
    style: str | None = Field(default=None, description="e.g. warm, news")
    # Clamped to 1..MAX_COUNT, never refused.
    count: int = Field(default=DEFAULT_COUNT, json_schema_extra=default_unstated)

    @field_validator("gender", mode="before")
    @classmethod
    def _gender(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = value.strip().lower()
            return value or None
        return value

    @field_validator("accent", "style", mode="before")
    @classmethod
    def _blank_is_none(cls, value: Any) -> Any:
        return value.strip() or None if isinstance(value, str) else value

    @field_validator("count", mode="before")
    @classmethod
    def _clamp(cls, value: Any) -> Any:
        if value is None:
            return DEFAULT_COUNT
        if isinstance(value, int | float) and not isinstance(value, bool):
            return clamp_count(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return clamp_count(value)
        return value


class VoiceFound(ToolOutput):
    """A voice as the model sees it (``voices.selectors.compact_voice``)."""

    id: str
    name: str = ""
    language: str = ""
    gender: str = ""
    age: str = ""
    accent: str = ""
    style: str = ""
    locale: str = Field(default="", description="When the voices found differ in locale.")


class VoicesFound(ToolOutput):
    voices: list[VoiceFound]
    count: int


def _filters(args: SearchVoicesArgs) -> str:
    given = {"gender": args.gender, "accent": args.accent, "style": args.style}
    parts = [f"{name}={value!r}" for name, value in given.items() if value]
    return ", ".join(parts)


def search_voices_handler(ctx: ToolContext, args: SearchVoicesArgs) -> dict[str, Any]:
    """Approved voices matching the arguments; ``ToolError`` with what exists otherwise."""
    try:
        voices = search_voices(
            language=args.language,
            gender=args.gender,
            accent=args.accent,
            style=args.style,
            count=args.count,
        )
    except UnknownLanguage as exc:
        raise ToolError(
            str(exc),
            "Call search_voices again with one of the available languages.",
            available={"languages": catalogue_languages()},
        ) from None
    except InvalidSearch as exc:
        raise ToolError(str(exc), f"Fix {exc.field} and search again.") from None
    if voices:
        return {"voices": voices, "count": len(voices)}

    language = normalise_language(args.language)
    facets = voice_facets(language)
    if not facets["genders"]:
        raise ToolError(
            f"The catalogue has no approved voices in {language_name(language.code)} "
            f"({language.code}).",
            "Tell the user this language is not available yet, or pick one of the "
            "available languages.",
            available={"languages": catalogue_languages()},
        )
    where = f"{language_name(language.code)} ({language.locale or language.code})"
    raise ToolError(
        f"No approved {where} voice matches {_filters(args) or 'this search'}.",
        "Drop or change the filter that excludes everything; 'available' lists what this "
        "language has (value: number of voices).",
        available=facets,
    )


SEARCH_VOICES = Tool(
    name="search_voices",
    description=(
        "Find approved voices, best first; only their ids may be a voiceId. "
        "Filter only as the brief asks."
    ),
    args_model=SearchVoicesArgs,
    handler=search_voices_handler,
    writes=False,
    output_model=VoicesFound,
)
