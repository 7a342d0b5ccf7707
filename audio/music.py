"""An ad's music behind one interface: a ``MusicProvider`` makes the bed for a draft's
prompt and length. The design's music drafts name the provider (``musicProvider``:
``loudly`` or ``mubert``); neither is connected yet, so every draft's music is today's
placeholder, a soft pad pulsing at the prompt's bpm that no one takes for the music the ad
will have, and the timeline says so. A real provider is one module with a ``bed`` of its
own, named in ``PROVIDERS``.
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


# Connected providers by the drafts' name for them: none yet.
PROVIDERS: dict[str, MusicProvider] = {}
PLACEHOLDER = PlaceholderBed()


def music_provider(name: str) -> tuple[MusicProvider, str]:
    """The provider that makes a draft's music, and what the timeline says of it: the
    placeholder bed, naming the provider the draft asked for, until that one is connected."""
    provider = PROVIDERS.get(name)
    if provider is not None:
        return provider, LABELS.get(name, name)
    asked = LABELS.get(name, name or "no provider")
    return PLACEHOLDER, f"placeholder bed: {asked} not connected"


def _bpm(prompt: str) -> int:
    match = _BPM.search(prompt)
    return max(40, min(200, int(match.group(1)))) if match else DEFAULT_BPM
