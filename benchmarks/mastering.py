"""Scratch tracks mastered like real ads: a 30-second ad in every catalogue language at
each loudness preset, measured by ffmpeg's ebur128 (not the renderer's meter).

    .venv/bin/python -m benchmarks.mastering [--runs 5] [--languages th,en]

Per preset: the worst true peak and the largest loudness error of the broadcast WAVs as
ffmpeg measures them, the loudest sample of the decoded MP3 and Opus files, and whether
each ad rendered twice gave the same samples (the speech, the mix and every file's
audio); then the median time of the render with all its files (the mix, mastering,
broadcast WAV, Ogg/Opus, MP3, stems) for the Thai ad, over ``--runs`` runs. No database:
the audio alone. Targets: true peak <= -1.0 dBTP (streaming, broadcast), <= -2.0 (atsc);
loudness within 0.5 LU; identical samples.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import soundfile

from audio import mix
from audio.presets import PRESETS
from providers.demo_lines import lines_for
from tests.support.ebur128 import measure

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "voices/fixtures/sample_catalogue.json"
# Two women and a man, as a cast might be: the guide voices follow the catalogue.
CAST = {
    "11": {"gender": "female", "age": "young"},
    "12": {"gender": "male", "age": "middle aged"},
    "13": {"gender": "female", "age": "old"},
}


def ad(language: str) -> dict:
    """benchmarks/render.py's ad: six lines of two sentences, 0.2 s apart, music at 96 bpm
    and two effects, in a 30 s slot."""
    bank = lines_for(language)
    lines = [bank.join([bank.calm[n], bank.calm[(n + 3) % len(bank.calm)]]) for n in range(6)]
    voices = {
        "voiceTracks": [
            {
                "id": f"track-{n}",
                "voiceId": str(11 + n % 3),
                "voiceName": "Guide",
                "text": line,
                "playAfter": "start" if n == 0 else f"track-{n - 1}",
                "overlap": -0.2,
            }
            for n, line in enumerate(lines)
        ]
    }
    return {
        "language": language,
        "slot_s": 30,
        "voices": voices,
        "music": {"musicPrompt": "Warm pad at 96 bpm", "duration": 30},
        "sfx": {
            "soundFxPrompts": [
                {"description": "chime", "placement": {"type": "start"}, "duration": 1.5},
                {"description": "cheer", "placement": {"type": "end"}, "duration": 2.0},
            ]
        },
        "cast": CAST,
        "preroll_s": 0.3,
        "gap_s": 0.25,
    }


def made(language: str, preset: str) -> tuple[mix.Mix, dict[str, bytes]]:
    rendered = mix.render(**ad(language), preset=PRESETS[preset])
    return rendered, rendered.deliverables(originated=MADE_AT)


MADE_AT = datetime(2026, 11, 29, 12, 0)  # the bext chunk's time: the same for both renders


def decoded(data: bytes) -> np.ndarray:
    return soundfile.read(io.BytesIO(data), dtype="float32")[0]


def decoded_peak_dbfs(data: bytes) -> float:
    return float(20 * np.log10(np.abs(decoded(data)).max()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--languages", default="", help="comma-separated; every one by default")
    args = parser.parse_args()
    languages = [code for code in args.languages.split(",") if code] or sorted(
        {voice["language"] for voice in json.loads(CATALOGUE.read_text())}
    )
    print(f"{len(languages)} languages: {', '.join(languages)}")
    for name, preset in PRESETS.items():
        worst_peak, worst_error, lossy_peak, identical = -99.0, 0.0, -99.0, True
        worst_at = ""
        for language in languages:
            first, files = made(language, name)
            second, again = made(language, name)
            identical &= np.array_equal(first.samples, second.samples) and all(
                np.array_equal(first.stems[k], second.stems[k]) for k in first.stems
            )
            # every file's bytes; the Ogg's decoded samples (each Ogg stream has a serial
            # number of its own, at random)
            identical &= all(files[f] == again[f] for f in files if f != "ogg")
            identical &= np.array_equal(decoded(files["ogg"]), decoded(again["ogg"]))
            heard = measure(files["wav"])
            error = abs(heard.integrated_lufs - preset.loudness_lufs)
            if heard.true_peak_dbtp > worst_peak:
                worst_peak, worst_at = heard.true_peak_dbtp, language
            worst_error = max(worst_error, error)
            lossy_peak = max(lossy_peak, *(decoded_peak_dbfs(files[f]) for f in ("mp3", "ogg")))
        print(
            f"{name:9} ({preset.loudness_lufs:g} LUFS, {preset.true_peak_dbtp:g} dBTP): "
            f"worst true peak {worst_peak:.1f} dBTP ({worst_at}), largest loudness error "
            f"{worst_error:.1f} LU (ffmpeg prints tenths), loudest decoded MP3/Opus sample "
            f"{lossy_peak:.2f} dBFS, "
            f"identical twice: {'yes' if identical else 'NO'}"
        )
    times = []
    for _ in range(args.runs):
        started = time.perf_counter()
        made("th", "streaming")
        times.append(time.perf_counter() - started)
    shown = ", ".join(f"{t:.2f}" for t in times)
    print(
        f"render of the 30 s Thai ad with every file: {shown} s (median "
        f"{statistics.median(times):.2f})"
    )


if __name__ == "__main__":
    main()
