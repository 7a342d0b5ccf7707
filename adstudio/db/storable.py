"""What PostgreSQL refuses to store and Python happily holds: NUL characters in text and
JSON. Model output and imported files are checked or cleaned with these before a write,
so a bad value is a named error or a replaced character, never a failed statement."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

NUL = "\x00"


def without_nul(value: Any) -> Any:
    """``value`` with every NUL in its strings (keys included) replaced by U+FFFD."""
    if isinstance(value, str):
        return value.replace(NUL, "\ufffd")
    if isinstance(value, dict):
        return {without_nul(key): without_nul(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(without_nul(item) for item in value)
    return value


def json_leaves(value: Any) -> Iterator[Any]:
    """Every key and scalar of a decoded JSON value. A loop, not recursion: the nesting
    may be as deep as the decoder allowed."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
        else:
            yield item


def has_nul(value: Any) -> bool:
    """Whether a NUL is in any string of the decoded JSON ``value``."""
    return any(isinstance(leaf, str) and NUL in leaf for leaf in json_leaves(value))
