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
    return measure_each([data], suffix)[0]


def measure_each(files: list[bytes], suffix: str = ".wav") -> list[Ebur128]:
    """``measure`` of each file, by one ffmpeg: an ebur128 filter of its own per input,
    each to a null output of its own. ffmpeg's start-up costs more than measuring a 10 s
    file; the filters share nothing, so each summary is what one ffmpeg per file prints."""
    if not files:
        return []
    with tempfile.TemporaryDirectory() as folder:
        command, graphs, outputs = [ffmpeg(), "-nostats", "-hide_banner"], [], []
        for n, data in enumerate(files):
            path = Path(folder) / f"audio-{n}{suffix}"
            path.write_bytes(data)
            command += ["-i", str(path)]
            graphs.append(f"[{n}:a]ebur128=peak=true[measured{n}]")
            outputs += ["-map", f"[measured{n}]", "-f", "null", "-"]
        done = subprocess.run(
            [*command, "-filter_complex", ";".join(graphs), *outputs],
            capture_output=True,
            text=True,
            timeout=60 + 5 * len(files),
            check=True,
        )
    return [_summary(done.stderr, f"[Parsed_ebur128_{n} @") for n in range(len(files))]


def _summary(stderr: str, prefix: str) -> Ebur128:
    """The figures of the last summary printed by the filter whose log lines start
    ``prefix`` (ffmpeg configures a graph once before the one that runs: its first
    summary is of no audio)."""
    starts = [
        m.end()
        for m in re.finditer(r"^(\[[^\]]+\]) Summary:", stderr, re.MULTILINE)
        if m.group(1).startswith(prefix)
    ]
    if not starts:
        raise ValueError(f"no ebur128 summary for {prefix!r} in ffmpeg's output: {stderr[-500:]}")
    summary = stderr[starts[-1] :].split("\n[", 1)[0]  # up to the next filter's lines
    found = _SUMMARY.search(summary)
    if found is None:
        raise ValueError(f"no ebur128 summary in ffmpeg's output: {summary[-500:]}")
    return Ebur128(float(found["i"]), float(found["peak"]))
