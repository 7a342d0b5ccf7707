"""The loudness a render is mastered to, by where the ad will play. Plain data (no numpy):
the render model and the API read it without loading the mix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    loudness_lufs: float  # integrated, ITU-R BS.1770-4
    true_peak_dbtp: float  # the ceiling: no true peak above it
    standard: str


STREAMING, BROADCAST, ATSC = "streaming", "broadcast", "atsc"
PRESETS = {
    # Spotify, YouTube, podcast platforms: -16 (or -14) LUFS, -1 dBTP.
    STREAMING: Preset(STREAMING, -16.0, -1.0, "streaming platforms"),
    BROADCAST: Preset(BROADCAST, -23.0, -1.0, "EBU R 128"),
    ATSC: Preset(ATSC, -24.0, -2.0, "ATSC A/85"),
}
DEFAULT = STREAMING
