"""The ``Range`` header of a request for a file (RFC 9110, section 14): players seek by
asking for byte ranges, and Safari plays audio only from a server that answers them."""

from __future__ import annotations

import re
from dataclasses import dataclass

_SPEC = re.compile(r"^\s*(\d*)\s*-\s*(\d*)\s*$")


@dataclass(frozen=True)
class ByteRange:
    start: int
    end: int  # inclusive, as Content-Range writes it

    @property
    def length(self) -> int:
        return self.end - self.start + 1

    def content_range(self, size: int) -> str:
        return f"bytes {self.start}-{self.end}/{size}"


class Unsatisfiable(Exception):
    """No range asked for lies within the file: a 416 with ``Content-Range: bytes */size``."""


def requested_range(header: str | None, size: int) -> ByteRange | None:
    """The one byte range ``header`` asks for within a file of ``size`` bytes, or None to
    answer with the whole file: no header, another unit, a malformed one, or several
    ranges (a server may answer those whole). ``Unsatisfiable`` when none overlaps it."""
    if not header:
        return None
    unit, _, specs = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in specs:
        return None
    match = _SPEC.match(specs)
    if match is None or match.groups() == ("", ""):
        return None
    first, last = match.groups()
    if first == "":  # the last N bytes
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise Unsatisfiable
        return ByteRange(max(size - suffix, 0), size - 1)
    start = int(first)
    if last and int(last) < start:
        return None  # not a valid range: the header is ignored
    if start >= size:
        raise Unsatisfiable
    return ByteRange(start, min(int(last), size - 1) if last else size - 1)
