"""Broadcast WAV (EBU Tech 3285, version 2): 24-bit PCM with a ``bext`` chunk that says
what the file is, who made it and when, and its loudness (EBU R 128 figures), as a
station's playout system reads them. libsndfile can write a ``bext`` chunk but soundfile
does not reach that call, so the few bytes are ours."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from audio.loudness import Measured

ORIGINATOR = "AdStudio"
UNSET = 0x7FFF  # EBU Tech 3285 v2: a loudness field not measured
# Description, Originator, OriginatorReference, OriginationDate, OriginationTime,
# TimeReference (low, high), Version, UMID, the five loudness fields, Reserved: 602 bytes.
_BEXT = struct.Struct("<256s32s32s10s8sIIH64s5h180s")


@dataclass(frozen=True)
class Bext:
    description: str
    originated: datetime
    measured: Measured
    reference: str = ""  # OriginatorReference: the render's id, say
    coding_history: str = ""


def _hundredths(value: float) -> int:
    """A loudness field: the value x 100, or ``UNSET`` when it is not a number."""
    return round(value * 100) if math.isfinite(value) and abs(value) < 327 else UNSET


def _text(value: str, size: int) -> bytes:
    return value.encode("ascii", "replace")[:size]


def bext_chunk(bext: Bext) -> bytes:
    m = bext.measured
    body = _BEXT.pack(
        _text(bext.description, 256),
        _text(ORIGINATOR, 32),
        _text(bext.reference, 32),
        bext.originated.strftime("%Y-%m-%d").encode(),
        bext.originated.strftime("%H:%M:%S").encode(),
        0,
        0,
        2,
        b"",
        _hundredths(m.integrated_lufs),
        _hundredths(m.range_lu),
        _hundredths(m.true_peak_dbtp),
        _hundredths(m.momentary_max_lufs),
        _hundredths(m.short_term_max_lufs),
        b"",
    )
    body += _text(bext.coding_history, 4096)
    return _chunk(b"bext", body)


def _chunk(tag: bytes, body: bytes) -> bytes:
    pad = b"\0" if len(body) % 2 else b""
    return tag + struct.pack("<I", len(body)) + body + pad


def broadcast_wav(samples: np.ndarray, rate: int, bext: Bext) -> bytes:
    """Mono 24-bit PCM (rounded, no dither: the same samples give the same bytes)."""
    scaled = np.clip(np.round(samples.astype(np.float64) * 8_388_608), -8_388_608, 8_388_607)
    pcm = scaled.astype("<i4").view(np.uint8).reshape(-1, 4)[:, :3].tobytes()
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate * 3, 3, 24)  # PCM, mono
    chunks = bext_chunk(bext) + _chunk(b"fmt ", fmt) + _chunk(b"data", pcm)
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks


def read_bext(data: bytes) -> dict[str, object]:
    """The ``bext`` chunk of a WAV file as named fields (loudness fields in their units)."""
    offset = 12
    while offset + 8 <= len(data):
        tag, size = data[offset : offset + 4], struct.unpack_from("<I", data, offset + 4)[0]
        if tag == b"bext":
            fields = _BEXT.unpack_from(data, offset + 8)
            names = (
                "LoudnessValue",
                "LoudnessRange",
                "MaxTruePeakLevel",
                "MaxMomentaryLoudness",
                "MaxShortTermLoudness",
            )
            loudness = {
                name: (None if raw == UNSET else raw / 100)
                for name, raw in zip(names, fields[9:14], strict=True)
            }
            history = data[offset + 8 + _BEXT.size : offset + 8 + size]
            return {
                "Description": fields[0].rstrip(b"\0").decode("ascii"),
                "Originator": fields[1].rstrip(b"\0").decode("ascii"),
                "OriginatorReference": fields[2].rstrip(b"\0").decode("ascii"),
                "OriginationDate": fields[3].decode("ascii"),
                "OriginationTime": fields[4].decode("ascii"),
                "Version": fields[7],
                **loudness,
                "CodingHistory": history.rstrip(b"\0").decode("ascii"),
            }
        offset += 8 + size + (size % 2)
    raise ValueError("no bext chunk")
