"""Reading catalogue files: format detection and record-by-record readers for our JSON and
CSV, the ElevenLabs ``GET /v1/voices`` export and Azure AI Speech's ``voices/list``. Each
record carries where it is in the file (line, and row or voice number) for the errors of
its validation (voices/catalogue_rows.py).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

from voices.catalogue_rows import FIELDS, REQUIRED, BadJson, Position, Record, kind_of


class CatalogueFormat(StrEnum):
    JSON = "json"  # our own: a JSON list of voice objects
    CSV = "csv"  # our own: the same fields as columns, one voice per row
    ELEVENLABS = "elevenlabs"  # the response of ElevenLabs' GET /v1/voices
    AZURE = "azure"  # the response of Azure AI Speech's GET /cognitiveservices/voices/list


_WS = re.compile(r"[ \t\n\r]*")
# Azure's listing is a JSON list like ours; its voices' keys are capitalised ("Name",
# "ShortName"...), ours never are: the first voice's first key tells them apart.
_AZURE_LISTING = re.compile(r'\[\s*\{\s*"(?:Name|DisplayName|LocalName|ShortName|Gender|Locale)"')
_NUL_ESCAPE = "\\u0000"  # how JSON text writes a NUL (a raw one is a syntax error)
# How JSON text writes half of a UTF-16 surrogate pair. The decoder joins a pair into one
# character; one left alone stays a lone surrogate, which is not Unicode text and which
# no database encoding can hold.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


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
        if chosen is CatalogueFormat.JSON and _AZURE_LISTING.match(text):
            chosen = CatalogueFormat.AZURE
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
            elif self.format is CatalogueFormat.AZURE:
                if text[pos : pos + 1] != "[":
                    raise CatalogueFileError(
                        f"{self.path}: expected Azure's voices/list response, a JSON list of "
                        'voices like [{"ShortName": ..., "Gender": ..., "Locale": ...}].'
                    )
                end = yield from self._array(text, pos, "voice", _azure_record)
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
        return Record(position, {}, problem=f"expected a voice object, got {kind_of(value)}")
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
        return Record(position, {}, problem=f"expected a voice object, got {kind_of(value)}")
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


# Azure field names for our fields, so errors name what the listing says.
_AZURE_NAMES = {
    "provider_voice_id": "ShortName",
    "name": "DisplayName",
    "language": "Locale",
    "locale": "Locale",
    "gender": "Gender",
    "style": "StyleList",
}
_STYLE_LENGTH = 64  # Voice.style's max_length


def _azure_record(value: Any, position: Position) -> Record:
    """Map one voice of Azure's ``voices/list`` onto our fields; the raw voice is kept as
    metadata.

    ``ShortName`` is the id (the name SSML's ``<voice name>`` takes), ``Locale`` the
    language and locale. The speaking styles go to ``style`` as many as fit its 64
    characters, and all of them, with the role-play roles and the secondary locales, to
    ``description``, whose words style search also matches.
    """
    if not isinstance(value, dict):
        return Record(position, {}, problem=f"expected a voice object, got {kind_of(value)}")
    lists: dict[str, list[str]] = {}
    for key in ("StyleList", "RolePlayList", "SecondaryLocaleList"):
        items = value.get(key)
        if items is None:
            items = []
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            return Record(
                position, {}, problem=f'"{key}" must be a list of names, got {kind_of(items)}'
            )
        lists[key] = [item.strip() for item in items if item.strip()]
    styles = lists["StyleList"]
    style = ""
    for name in styles:
        longer = f"{style}, {name}" if style else name
        if len(longer) > _STYLE_LENGTH:
            break
        style = longer
    described = [
        f"{label}: {', '.join(items)}."
        for label, items in (
            ("Speaking styles", styles),
            ("Roles", lists["RolePlayList"]),
            ("Also speaks", lists["SecondaryLocaleList"]),
        )
        if items
    ]
    data = {
        "provider_voice_id": value.get("ShortName"),
        "name": value.get("DisplayName"),
        "language": value.get("Locale"),
        "locale": value.get("Locale"),
        "gender": value.get("Gender"),
        "style": style,
        "description": " ".join(described),
        "metadata": value,
    }
    return Record(position, data, source_names=_AZURE_NAMES)


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
                    data["metadata"] = BadJson(exc.msg)
                except (ValueError, RecursionError) as exc:
                    data["metadata"] = BadJson(_decode_problem(exc))
            else:
                data.pop("metadata", None)
            yield Record(
                position,
                data,
                json_without_nul=_NUL_ESCAPE not in raw_metadata,
                json_without_surrogate=not _SURROGATE_ESCAPE.search(raw_metadata),
            )
