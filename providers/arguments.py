"""Tool-call arguments: parse the string a model sent, repair it when it is malformed, and
serialise parsed arguments back to the wire deterministically.

Repair uses json-repair (a real tolerant parser), never regexes: a regex that turns ``'``
into ``"`` breaks every script line containing "don't".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import json_repair

from adstudio.db.storable import NUL, json_leaves, without_nul

_FENCE = "```"


_LARGEST_INTEGER = 2**63  # beyond any count or id a tool takes, and beyond a bigint


@dataclass(frozen=True)
class ParsedArguments:
    arguments: dict[str, Any]
    parse_error: str | None = None
    repaired: bool = False


def parse_arguments(raw: str | dict[str, Any] | None) -> ParsedArguments:
    """Turn what the model sent into an arguments object, repairing it where possible.

    A zero-argument call's ``""`` (or ``null``) is ``{}`` and not a repair. Arguments that
    still are not a JSON object after repair come back with ``parse_error`` set, so the
    loop can answer the call with a tool error the model sees instead of crashing. So do
    arguments the database cannot store: ``NaN``, ``Infinity``, integers beyond 64 bits
    and NUL characters, which Python's JSON parser accepts and PostgreSQL refuses.
    """
    parsed = _parse(raw)
    unstorable = _unstorable(parsed.arguments)
    if unstorable:
        return ParsedArguments({}, parse_error=f"arguments contain {unstorable}: {_clip(raw)}")
    return parsed


def _parse(raw: str | dict[str, Any] | None) -> ParsedArguments:
    if raw is None:
        return ParsedArguments({})
    if isinstance(raw, dict):  # some servers send the object itself instead of a string
        return ParsedArguments(dict(raw))
    text = raw.strip()
    if not text or text == "null":
        return ParsedArguments({})
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested thousands of levels deep
        pass
    else:
        if isinstance(value, dict):
            return ParsedArguments(value)
        if isinstance(value, str):  # double-encoded: "{\"a\": 1}"
            inner = _parse(value)
            if inner.parse_error is None:
                return ParsedArguments(inner.arguments, repaired=True)
        return ParsedArguments({}, parse_error=_not_an_object(value, raw))
    return _repair(text, raw)


def _repair(text: str, raw: str) -> ParsedArguments:
    try:
        value = json_repair.repair_json(_strip_fences(text), return_objects=True)
    except Exception as exc:  # the repairer is a best effort; its failure is a parse error
        return ParsedArguments({}, parse_error=f"arguments are not valid JSON ({exc})")
    if isinstance(value, dict):
        return ParsedArguments(value, repaired=True)
    if value == "":  # json-repair found nothing that looks like JSON
        return ParsedArguments(
            {}, parse_error=f"arguments are not valid JSON and could not be repaired: {_clip(raw)}"
        )
    return ParsedArguments({}, parse_error=_not_an_object(value, raw))


def _strip_fences(text: str) -> str:
    """Drop a markdown code fence around the JSON (```json ... ```)."""
    if text.startswith(_FENCE):
        text = text[len(_FENCE) :]
        newline = text.find("\n")
        if newline != -1 and not text[:newline].strip().startswith(("{", "[")):
            text = text[newline + 1 :]  # the info string: "json"
        if text.rstrip().endswith(_FENCE):
            text = text.rstrip()[: -len(_FENCE)]
    return text.strip()


def _unstorable(arguments: dict[str, Any]) -> str | None:
    """What in ``arguments`` a JSON column cannot hold, if anything."""
    for value in json_leaves(arguments):
        if isinstance(value, float) and not math.isfinite(value):
            return "a number that is not finite (NaN or Infinity)"
        if isinstance(value, int) and not isinstance(value, bool):
            if abs(value) >= _LARGEST_INTEGER:
                return "an integer too large"
        elif isinstance(value, str) and NUL in value:
            return "a NUL character"
    return None


def _not_an_object(value: Any, raw: str) -> str:
    kind = type(value).__name__ if value is not None else "null"
    return f"arguments must be a JSON object, got {kind}: {_clip(raw)}"


def _clip(raw: Any, limit: int = 200) -> str:
    """The start of what the model sent, for an error message, which must be storable."""
    try:
        text = raw if isinstance(raw, str) else json.dumps(raw, default=str)
    except ValueError:  # an integer of thousands of digits
        text = "(an object too large to show)"
    text = without_nul(text)
    return text if len(text) <= limit else text[:limit] + "..."


def dump_arguments(arguments: dict[str, Any]) -> str:
    """The wire form of parsed arguments: the same bytes for the same object, every time.

    History is replayed from the parsed (repaired) object, never from the raw string:
    DashScope rejects a whole request that replays a broken argument string, and a stable
    serialisation keeps the request prefix identical across turns for prompt caching.
    """
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
