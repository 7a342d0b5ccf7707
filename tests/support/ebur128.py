"""Loudness and true peak as ffmpeg's ebur128 filter measures them: a meter that shares
nothing with the renderer's (its own K-weighting, gating and oversampling), for the tests
and benchmarks that check the renderer's figures."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

_SUMMARY = re.compile(
    r"Integrated loudness:\s+I:\s+(?P<i>-?[\d.]+|-inf) LUFS.*?"
    r"True peak:\s+Peak:\s+(?P<peak>-?[\d.]+|-inf) dBFS",
    re.DOTALL,
)


@dataclass(frozen=True)
class Ebur128:
    integrated_lufs: float
    true_peak_dbtp: float  # ffmpeg prints one decimal


def ffmpeg() -> str:
    found = shutil.which("ffmpeg")
    if found is None:
        raise RuntimeError("ffmpeg is not installed: apt-get install ffmpeg (.ci/run installs it)")
    return found


def measure(data: bytes, suffix: str = ".wav") -> Ebur128:
    """The summary of ``ffmpeg -i FILE -af ebur128=peak=true -f null -`` for these bytes."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"audio{suffix}"
        path.write_bytes(data)
        command = [ffmpeg(), "-nostats", "-hide_banner", "-i", str(path)]
        done = subprocess.run(
            [*command, "-af", "ebur128=peak=true", "-f", "null", "-"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
    summary = done.stderr[done.stderr.rindex("Summary:") :]
    found = _SUMMARY.search(summary)
    if found is None:
        raise ValueError(f"no ebur128 summary in ffmpeg's output: {summary[-500:]}")
    return Ebur128(float(found["i"]), float(found["peak"]))
