"""A catalogue's records and rows: one voice as a file gives it (``Record``), the checks
that make it a row ready to write (``RowValidator``), and what is wrong with it when they
fail, with where it is in the file and which field (``RowError``), so an operator can fix
the file without reading a traceback. The readers are voices/catalogue_readers.py.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from adstudio.db.storable import NUL, has_nul, json_leaves
from adstudio.languages import UnknownLanguage, normalise_language
from voices.fields import CATALOGUE_FIELDS
from voices.models import Gender, Voice

# The fields of our own JSON and CSV formats, in the order the CSV header is written.
FIELDS = CATALOGUE_FIELDS
REQUIRED: tuple[str, ...] = ("provider", "provider_voice_id", "name", "language", "gender")

GENDER_ALIASES: dict[str, Gender] = {
    "male": Gender.MALE,
    "m": Gender.MALE,
    "man": Gender.MALE,
    "masculine": Gender.MALE,
    "female": Gender.FEMALE,
    "f": Gender.FEMALE,
    "woman": Gender.FEMALE,
    "feminine": Gender.FEMALE,
    "neutral": Gender.NEUTRAL,
    "non-binary": Gender.NEUTRAL,
    "nonbinary": Gender.NEUTRAL,
    "non binary": Gender.NEUTRAL,
    "androgynous": Gender.NEUTRAL,
}

_MAX_LENGTHS = {
    f.name: f.max_length
    for f in Voice._meta.get_fields()
    if getattr(f, "max_length", None) and f.name in FIELDS
}
_LABEL_FIELDS = ("accent", "age", "style", "use_case")
_url_validator = URLValidator(schemes=["http", "https"])
_NO_WHITESPACE = re.compile(r"[^\s]*\Z")  # URLValidator's rule for the path: [/?#][^\s]*
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class Position:
    """Where a record starts: its 1-based number among the records, and its file line."""

    kind: str  # "row" (CSV) or "voice" (JSON)
    number: int
    line: int

    def __str__(self) -> str:
        return f"line {self.line} ({self.kind} {self.number})"


@dataclass(frozen=True)
class RowError:
    position: Position
    field: str  # the field as the file names it; "" when the record as a whole is wrong
    message: str

    def __str__(self) -> str:
        where = f"{self.position}, field {self.field!r}" if self.field else str(self.position)
        return f"{where}: {self.message}"


@dataclass
class Record:
    """One voice as read from the file, in our field names, before validation."""

    position: Position
    data: dict[str, Any]
    # Our field name -> the name the file uses, for error messages (ElevenLabs differs).
    source_names: dict[str, str] = field(default_factory=dict)
    problem: str = ""  # set when the record is not even an object
    # Its JSON was decoded from text without a \u0000 escape, so holds no NUL (the decoder
    # refuses a raw one): validation need not walk it looking for one.
    json_without_nul: bool = False
    # Likewise without a surrogate escape (\ud800 to \udfff), so holds no lone surrogate.
    json_without_surrogate: bool = True


@dataclass(frozen=True)
class VoiceRow:
    """A valid voice, ready to write: the values of the model's fields."""

    position: Position
    values: dict[str, Any]

    @property
    def key(self) -> tuple[str, str]:
        return self.values["provider"], self.values["provider_voice_id"]


@dataclass(frozen=True)
class BadJson:
    """A field the file holds as JSON text that is not JSON: what the decoder said."""

    message: str


@dataclass(frozen=True)
class Validated:
    row: VoiceRow | None
    errors: list[RowError]
    key: tuple[str, str] | None  # known even for some invalid rows (for duplicates)


class RowValidator:
    """Turns a ``Record`` into a ``VoiceRow`` or the list of what is wrong with it."""

    def __init__(
        self,
        *,
        provider: str | None = None,
        default_provider: str = "",
        default_language: str | None = None,
    ) -> None:
        self.provider = _clean_provider(provider) if provider else ""
        self.default_provider = default_provider
        self.default_language = default_language or ""

    def validate(self, record: Record) -> Validated:
        errors: list[RowError] = []

        def fail(name: str, message: str) -> None:
            errors.append(RowError(record.position, record.source_names.get(name, name), message))

        if record.problem:
            errors.append(RowError(record.position, "", record.problem))
            return Validated(None, errors, None)
        data = record.data
        unknown = [name for name in data if name not in FIELDS]
        for name in unknown:
            fail(name, f"unknown field; the fields are {', '.join(FIELDS)}")
        values: dict[str, Any] = {}
        for name in FIELDS:
            if name == "metadata":
                continue
            raw = data.get(name)
            if raw is None:
                values[name] = ""
            elif isinstance(raw, str) and NUL in raw:
                fail(name, "contains a NUL character")
                values[name] = ""
            elif isinstance(raw, str) and _lone_surrogate(record, raw):
                fail(name, _SURROGATE_PROBLEM)
                values[name] = ""
            elif isinstance(raw, str):
                values[name] = raw.strip()
            else:
                fail(name, f"expected text, got {kind_of(raw)}")
                values[name] = ""

        provider = _clean_provider(values["provider"]) if values["provider"] else ""
        if self.provider and provider and provider != self.provider:
            fail("provider", f"{provider!r} differs from --provider {self.provider!r}")
        values["provider"] = provider or self.provider or self.default_provider
        if not values["language"] and self.default_language:
            values["language"] = self.default_language

        reported = {error.field for error in errors}
        for name in REQUIRED:
            if not values[name] and record.source_names.get(name, name) not in reported:
                hint = " (or pass --provider)" if name == "provider" else ""
                hint = " (or pass --default-language)" if name == "language" else hint
                fail(name, f"required field is missing{hint}")
        key = (
            (values["provider"], values["provider_voice_id"])
            if values["provider"] and values["provider_voice_id"]
            else None
        )

        if values["gender"]:
            gender = GENDER_ALIASES.get(" ".join(values["gender"].lower().split()))
            if gender is None:
                fail(
                    "gender",
                    f"unknown gender {values['gender']!r}; expected male, female or neutral",
                )
            else:
                values["gender"] = gender.value
        if values["language"]:
            self._language(values, fail)
        for name in _LABEL_FIELDS:
            values[name] = _clean_label(values[name])
        reported = {error.field for error in errors}
        for name, limit in _MAX_LENGTHS.items():
            if len(values[name]) > limit and record.source_names.get(name, name) not in reported:
                fail(name, f"is {len(values[name])} characters long; the limit is {limit}")
        if values["preview_url"] and not _is_http_url(values["preview_url"]):
            fail("preview_url", f"{values['preview_url']!r} is not an http(s) URL")
        metadata = data.get("metadata", {})
        if isinstance(metadata, BadJson):
            fail("metadata", f"is not valid JSON ({metadata.message})")
        elif metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            fail("metadata", f"expected a JSON object, got {kind_of(metadata)}")
        elif not record.json_without_nul and has_nul(metadata):
            fail("metadata", "contains a NUL character")
        elif any(
            isinstance(leaf, str) and _lone_surrogate(record, leaf)
            for leaf in json_leaves(metadata)
        ):
            fail("metadata", _SURROGATE_PROBLEM)
        values["metadata"] = metadata if isinstance(metadata, dict) else {}

        if errors:
            return Validated(None, errors, key)
        return Validated(VoiceRow(record.position, values), [], key)

    def _language(self, values: dict[str, Any], fail) -> None:
        original = values["language"]
        try:
            language = normalise_language(original)
        except UnknownLanguage as exc:
            fail("language", str(exc))
            return
        values["language"] = language.code
        locale = language.locale
        if values["locale"]:
            try:
                given = normalise_language(values["locale"])
            except UnknownLanguage:
                fail("locale", f"{values['locale']!r} is not a locale such as 'pt-BR' or 'en-GB'")
                return
            if given.code != language.code:
                fail(
                    "locale",
                    f"{values['locale']!r} is not a variant of language {language.code!r}",
                )
                return
            if language.locale and given.locale and given.locale != language.locale:
                fail("locale", f"{given.locale!r} contradicts language {original!r}")
                return
            locale = given.locale or locale
        values["locale"] = locale


_SURROGATE_PROBLEM = (
    "contains half of a UTF-16 surrogate pair alone (an escape from \\ud800 to \\udfff), "
    "which is not Unicode text"
)


def _lone_surrogate(record: Record, text: str) -> bool:
    return not record.json_without_surrogate and _LONE_SURROGATE.search(text) is not None


def _is_http_url(value: str) -> bool:
    """Django's ``URLValidator`` verdict, with each origin validated once.

    The validator judges everything up to the path (scheme, user, host, port) and asks of
    the path only that it hold no whitespace: so ``origin + path`` is valid exactly when
    the origin is and the path has no whitespace. A catalogue's preview URLs share a few
    origins, and the full validation (over a third of the time spent validating rows) runs a
    few times instead of once per voice."""
    scheme_end = value.find("://")
    path_start = value.find("/", scheme_end + 3) if scheme_end >= 0 else -1
    if path_start < 0 or len(value) > _url_validator.max_length:
        return _valid_url(value)
    origin = value[:path_start]
    return _valid_url(origin) and _NO_WHITESPACE.match(value, path_start) is not None


@functools.lru_cache(maxsize=1024)
def _valid_url(value: str) -> bool:
    try:
        _url_validator(value)
    except ValidationError:
        return False
    return True


def _clean_provider(value: str) -> str:
    return value.strip().lower()


def _clean_label(value: str) -> str:
    """``middle_aged`` -> ``middle aged``: labels are words, so search can match them."""
    return " ".join(value.replace("_", " ").split())


def kind_of(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true/false"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"the number {value}"
    return names.get(type(value), type(value).__name__)
