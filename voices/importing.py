"""Reading catalogue files: format detection, record-by-record readers for our JSON and CSV
and the ElevenLabs ``GET /v1/voices`` export, and validation of each record into a row.

Every problem is reported with where it is in the file (line, and row or voice number)
and which field, so an operator can fix the file without reading a traceback.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import URLValidator

from adstudio.languages import UnknownLanguage, normalise_language
from adstudio.storable import NUL, has_nul, json_leaves
from voices.fields import CATALOGUE_FIELDS
from voices.models import Gender, Voice


class CatalogueFormat(StrEnum):
    JSON = "json"  # our own: a JSON list of voice objects
    CSV = "csv"  # our own: the same fields as columns, one voice per row
    ELEVENLABS = "elevenlabs"  # the response of ElevenLabs' GET /v1/voices


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
_WS = re.compile(r"[ \t\n\r]*")
_NUL_ESCAPE = "\\u0000"  # how JSON text writes a NUL (a raw one is a syntax error)
# How JSON text writes half of a UTF-16 surrogate pair. The decoder joins a pair into one
# character; one left alone stays a lone surrogate, which is not Unicode text and which
# no database encoding can hold.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _not_json(constant: str) -> None:
    """``NaN`` and ``Infinity``: Python's decoder accepts them, JSON and PostgreSQL do not."""
    raise ValueError(f"{constant} is not a JSON value")


def _finite(text: str) -> float:
    """A JSON number as a float; one past a float's range (``1e400``) is refused, as NaN
    and Infinity are: Python would read it as infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large a number")
    return value


_decoder = json.JSONDecoder(parse_constant=_not_json, parse_float=_finite)


def _decode_problem(exc: ValueError | RecursionError) -> str:
    """What a decoder error other than a syntax error says is wrong, in a few words."""
    if isinstance(exc, RecursionError):
        return "values nested too deeply"
    if "integer string conversion" in str(exc):
        return "a number with too many digits"
    return str(exc)


class CatalogueFileError(Exception):
    """The file as a whole cannot be read (missing, not UTF-8, broken JSON or CSV)."""


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


# --- reading ---------------------------------------------------------------------------


class CatalogueReader:
    """Yields a file's records one by one and says how far through the file it is."""

    format: CatalogueFormat

    def records(self) -> Iterator[Record]:
        raise NotImplementedError

    def fraction_done(self) -> float:
        raise NotImplementedError


def open_catalogue(path: str | os.PathLike[str], file_format: str | None = None) -> CatalogueReader:
    """A reader for ``path``; the format comes from ``file_format`` or the first character."""
    path = Path(path)
    try:
        if path.is_dir():
            raise CatalogueFileError(f"Cannot read {path}: it is a directory, not a file.")
        with path.open("rb") as probe:
            head = probe.read(4096)
    except OSError as exc:
        raise CatalogueFileError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if file_format is None:
        text = head.decode("utf-8-sig", errors="ignore").lstrip()
        if not text:
            raise CatalogueFileError(f"{path} is empty: it has no voices to import.")
        detected = {"[": CatalogueFormat.JSON, "{": CatalogueFormat.ELEVENLABS}
        chosen = detected.get(text[0], CatalogueFormat.CSV)
    else:
        try:
            chosen = CatalogueFormat(file_format)
        except ValueError:
            names = ", ".join(f.value for f in CatalogueFormat)
            raise CatalogueFileError(
                f"Unknown format {file_format!r}: use one of {names}."
            ) from None
    if chosen is CatalogueFormat.CSV:
        return CsvReader(path)
    return JsonReader(path, chosen)


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CatalogueFileError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CatalogueFileError(
            f"{path} is not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line}): "
            "save it as UTF-8."
        ) from None


class JsonReader(CatalogueReader):
    """Our JSON list, or ElevenLabs' ``{"voices": [...]}``.

    The text is read whole (a 100,000-voice file is ~30 MB), but decoded one voice at a
    time with the standard library's decoder, so each voice's line is known and only
    one batch of decoded voices is alive at once.
    """

    def __init__(self, path: Path, file_format: CatalogueFormat) -> None:
        self.path = path
        self.format = file_format
        self._text = ""
        self._pos = 0
        self._has_nul_escape = True
        self._has_surrogate_escape = True

    def fraction_done(self) -> float:
        return self._pos / len(self._text) if self._text else 0.0

    def _error(self, exc: json.JSONDecodeError) -> CatalogueFileError:
        return CatalogueFileError(
            f"{self.path} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}."
        )

    def records(self) -> Iterator[Record]:
        text = self._text = _read_text(self.path)
        self._has_nul_escape = _NUL_ESCAPE in text  # one scan, not one per voice
        self._has_surrogate_escape = _SURROGATE_ESCAPE.search(text) is not None
        pos = _WS.match(text).end()
        try:
            if self.format is CatalogueFormat.JSON:
                if text[pos : pos + 1] != "[":
                    hint = (
                        " It looks like an ElevenLabs export: use --format elevenlabs."
                        if text[pos : pos + 1] == "{"
                        else ""
                    )
                    raise CatalogueFileError(
                        f"{self.path}: expected a JSON list of voices at line "
                        f"{text.count(chr(10), 0, pos) + 1}.{hint}"
                    )
                end = yield from self._array(text, pos, "voice", _own_record)
            else:
                end = yield from self._elevenlabs(text, pos)
            end = _WS.match(text, end).end()
            if end != len(text):
                raise json.JSONDecodeError("Extra data after the voices", text, end)
        except json.JSONDecodeError as exc:
            raise self._error(exc) from None
        except (ValueError, RecursionError) as exc:
            line = text.count("\n", 0, self._pos) + 1
            raise CatalogueFileError(
                f"{self.path} is not valid JSON: {_decode_problem(exc)}, after line {line}."
            ) from None
        self._pos = len(text)

    def _array(self, text: str, pos: int, kind: str, convert) -> Iterator[Record]:
        """Yield each element of the array starting at ``pos``; return the end offset."""
        pos = _WS.match(text, pos + 1).end()
        number, line, counted_to = 0, 1, 0
        if text[pos : pos + 1] == "]":
            return pos + 1
        while True:
            value, end = _decoder.raw_decode(text, pos)
            number += 1
            line += text.count("\n", counted_to, pos)
            counted_to = pos
            self._pos = end
            record = convert(value, Position(kind, number, line))
            record.json_without_nul = (
                not self._has_nul_escape or text.find(_NUL_ESCAPE, pos, end) < 0
            )
            record.json_without_surrogate = (
                not self._has_surrogate_escape or not _SURROGATE_ESCAPE.search(text, pos, end)
            )
            yield record
            pos = _WS.match(text, end).end()
            char = text[pos : pos + 1]
            if char == "]":
                return pos + 1
            if char != ",":
                raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
            pos = _WS.match(text, pos + 1).end()

    def _elevenlabs(self, text: str, pos: int) -> Iterator[Record]:
        if text[pos : pos + 1] != "{":
            raise CatalogueFileError(
                f'{self.path}: expected an ElevenLabs response, a JSON object with a "voices" list.'
            )
        found = False
        pos = _WS.match(text, pos + 1).end()
        if text[pos : pos + 1] == "}":
            pos += 1
        else:
            while True:
                key, pos = _decoder.raw_decode(text, pos)
                if not isinstance(key, str):
                    raise json.JSONDecodeError("Expecting property name", text, pos)
                pos = _WS.match(text, pos).end()
                if text[pos : pos + 1] != ":":
                    raise json.JSONDecodeError("Expecting ':' delimiter", text, pos)
                pos = _WS.match(text, pos + 1).end()
                if key == "voices" and text[pos : pos + 1] == "[":
                    found = True
                    pos = yield from self._array(text, pos, "voice", _elevenlabs_record)
                else:
                    _value, pos = _decoder.raw_decode(text, pos)
                pos = _WS.match(text, pos).end()
                char = text[pos : pos + 1]
                if char == "}":
                    pos += 1
                    break
                if char != ",":
                    raise json.JSONDecodeError("Expecting ',' delimiter", text, pos)
                pos = _WS.match(text, pos + 1).end()
        if not found:
            raise CatalogueFileError(
                f'{self.path}: no "voices" list in this JSON object; an ElevenLabs export '
                'looks like {"voices": [{"voice_id": ..., "name": ..., "labels": {...}}]}.'
            )
        return pos


def _own_record(value: Any, position: Position) -> Record:
    if not isinstance(value, dict):
        return Record(position, {}, problem=f"expected a voice object, got {_kind(value)}")
    return Record(position, value)


# ElevenLabs field names for our fields, so errors name what the file says.
_ELEVENLABS_NAMES = {
    "provider_voice_id": "voice_id",
    "language": "verified_languages[0].language",
    "locale": "verified_languages[0].locale",
    "gender": "labels.gender",
    "accent": "labels.accent",
    "age": "labels.age",
    "style": "labels.descriptive",
    "use_case": "labels.use_case",
}


def _elevenlabs_record(value: Any, position: Position) -> Record:
    """Map one ElevenLabs voice onto our fields; the raw voice is kept as metadata.

    The language is ``labels.language`` if set, else the first verified language (a
    voice verified in several languages is filed under its first one).
    """
    if not isinstance(value, dict):
        return Record(position, {}, problem=f"expected a voice object, got {_kind(value)}")
    labels = value.get("labels") if isinstance(value.get("labels"), dict) else {}
    verified = value.get("verified_languages")
    first = verified[0] if isinstance(verified, list) and verified else {}
    first = first if isinstance(first, dict) else {}
    names = dict(_ELEVENLABS_NAMES)
    language = labels.get("language")
    if language:
        names["language"] = "labels.language"
    else:
        fine_tuning = value.get("fine_tuning")
        language = first.get("language") or (
            fine_tuning.get("language") if isinstance(fine_tuning, dict) else None
        )
    data = {
        "provider_voice_id": value.get("voice_id"),
        "name": value.get("name"),
        "language": language,
        "locale": first.get("locale") or labels.get("locale"),
        "gender": labels.get("gender"),
        "accent": labels.get("accent") or first.get("accent"),
        "age": labels.get("age"),
        # Newer responses label the tone "descriptive"; older ones "description".
        "style": labels.get("descriptive") or labels.get("description"),
        "use_case": labels.get("use_case"),
        "description": value.get("description"),
        "preview_url": value.get("preview_url") or first.get("preview_url"),
        "metadata": value,
    }
    if not labels.get("descriptive") and labels.get("description"):
        names["style"] = "labels.description"
    return Record(position, data, source_names=names)


class CsvReader(CatalogueReader):
    """Our CSV: a header naming the fields (any order), UTF-8, comma-separated."""

    format = CatalogueFormat.CSV

    def __init__(self, path: Path) -> None:
        self.path = path
        self._binary: io.BufferedReader | None = None
        self._size = 0

    def fraction_done(self) -> float:
        if self._binary is None or not self._size or self._binary.closed:
            return 1.0 if self._binary is not None else 0.0
        return min(self._binary.tell() / self._size, 1.0)

    def records(self) -> Iterator[Record]:
        try:
            self._binary = self.path.open("rb")
            self._size = os.fstat(self._binary.fileno()).st_size
        except OSError as exc:
            raise CatalogueFileError(f"Cannot read {self.path}: {exc.strerror or exc}.") from None
        with (
            self._binary,
            io.TextIOWrapper(self._binary, encoding="utf-8-sig", newline="") as text,
        ):
            reader = csv.reader(text, strict=True)
            try:
                yield from self._rows(reader)
            except csv.Error as exc:
                raise CatalogueFileError(
                    f"{self.path} is not valid CSV: {exc} at line {reader.line_num}."
                ) from None
            except UnicodeDecodeError:
                raise CatalogueFileError(
                    f"{self.path} is not UTF-8 text (near line {reader.line_num + 1}): "
                    "save it as UTF-8."
                ) from None

    def _rows(self, reader) -> Iterator[Record]:
        header = next(reader, None)
        if header is None:
            raise CatalogueFileError(f"{self.path} is empty: it has no header and no voices.")
        columns = [name.strip().lower() for name in header]
        unknown = [name for name in columns if name not in FIELDS]
        if unknown:
            raise CatalogueFileError(
                f"{self.path}, line 1: unknown column {unknown[0]!r}; the columns are "
                f"{', '.join(FIELDS)}."
            )
        repeated = sorted({name for name in columns if columns.count(name) > 1})
        if repeated:
            raise CatalogueFileError(f"{self.path}, line 1: column {repeated[0]!r} appears twice.")
        missing = [name for name in REQUIRED if name not in columns and name != "provider"]
        if missing:
            raise CatalogueFileError(
                f"{self.path}, line 1: missing column {missing[0]!r} (required: "
                f"{', '.join(REQUIRED)}; provider may come from --provider instead)."
            )
        number = 0
        line = reader.line_num + 1
        for cells in reader:
            number += 1
            position = Position("row", number, line)
            line = reader.line_num + 1
            if not any(cell.strip() for cell in cells):
                number -= 1  # blank lines are not rows
                continue
            if len(cells) != len(columns):
                yield Record(
                    position,
                    {},
                    problem=f"has {len(cells)} fields but the header has {len(columns)}",
                )
                continue
            data: dict[str, Any] = dict(zip(columns, cells, strict=True))
            raw_metadata = data.get("metadata", "")
            if raw_metadata.strip():
                try:
                    data["metadata"] = _decoder.decode(raw_metadata)
                except json.JSONDecodeError as exc:
                    data["metadata"] = _BadJson(exc.msg)
                except (ValueError, RecursionError) as exc:
                    data["metadata"] = _BadJson(_decode_problem(exc))
            else:
                data.pop("metadata", None)
            yield Record(
                position,
                data,
                json_without_nul=_NUL_ESCAPE not in raw_metadata,
                json_without_surrogate=not _SURROGATE_ESCAPE.search(raw_metadata),
            )


@dataclass(frozen=True)
class _BadJson:
    message: str


# --- validating ------------------------------------------------------------------------


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
                fail(name, f"expected text, got {_kind(raw)}")
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
        if isinstance(metadata, _BadJson):
            fail("metadata", f"is not valid JSON ({metadata.message})")
        elif metadata is None:
            metadata = {}
        elif not isinstance(metadata, dict):
            fail("metadata", f"expected a JSON object, got {_kind(metadata)}")
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


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "a list", str: "text", bool: "true/false"}
    if value is None:
        return "null"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"the number {value}"
    return names.get(type(value), type(value).__name__)
