"""An ad's music behind one interface: a ``MusicProvider`` makes the bed for a draft's
prompt and length. The design's music drafts name the provider (``musicProvider``:
``loudly`` or ``mubert``). A bed a provider composed is handed in made (``MadeBed``: the
network is the render's business, not the mix's); otherwise the placeholder makes it, a
soft pad pulsing at the prompt's bpm that no one takes for the music the ad will have, and
the timeline says why.
"""

from __future__ import annotations

import re
from typing import Protocol

import numpy as np

DEFAULT_BPM = 100
_BPM = re.compile(r"(\d{2,3})\s*bpm", re.IGNORECASE)
# The design's providers, as the review desk names them.
LABELS = {"loudly": "Loudly", "mubert": "Mubert"}


class MusicProvider(Protocol):
    """Makes an ad's music: ``count`` float32 samples in -1..1 at ``rate`` for ``prompt``."""

    name: str

    def bed(self, *, prompt: str, count: int, rate: int) -> np.ndarray: ...


class PlaceholderBed:
    """A minor-seventh pad whose level pulses on each beat of the prompt's bpm."""

    name = "placeholder"

    def bed(self, *, prompt: str, count: int, rate: int) -> np.ndarray:
        bpm = _bpm(prompt)
        t = np.arange(count, dtype=np.float32) / rate
        chord = sum(np.sin(2 * np.pi * f * t) for f in (220.0, 261.63, 329.63, 392.0)) / 4
        beat = (t * bpm / 60.0) % 1.0
        pulse = 0.6 + 0.4 * np.exp(-6.0 * beat)
        fade = np.minimum(1.0, np.minimum(t, (count / rate) - t) / 0.5)  # in and out, 0.5 s
        return (chord * pulse * np.clip(fade, 0.0, 1.0)).astype(np.float32)


class MadeBed:
    """A bed a provider composed (``samples`` at ``rate``), fitted to the music's place:
    resampled, cut or padded with silence to its length, with a short fade at the end."""

    FADE_S = 0.05

    def __init__(self, samples: np.ndarray, rate: int, name: str) -> None:
        self.samples, self.rate, self.name = samples, rate, name

    def bed(self, *, prompt: str, count: int, rate: int) -> np.ndarray:
        from scipy.signal import resample_poly

        common = np.gcd(self.rate, rate)
        made = resample_poly(self.samples, rate // common, self.rate // common)
        made = np.pad(made, (0, max(0, count - len(made))))[:count].astype(np.float32)
        fade = min(count, round(self.FADE_S * rate))
        if fade:
            made[count - fade :] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)
        return made


PLACEHOLDER = PlaceholderBed()


def placeholder_note(asked: str, why: str = "not connected") -> str:
    """What the timeline says of the placeholder: "placeholder bed: Loudly not connected"."""
    return f"placeholder bed: {LABELS.get(asked, asked or 'no provider')} {why}"


def _bpm(prompt: str) -> int:
    match = _BPM.search(prompt)
    return max(40, min(200, int(match.group(1)))) if match else DEFAULT_BPM
