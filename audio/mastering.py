"""A mix mastered to a preset (``audio.presets``): a gain to the preset's integrated
loudness, and a true-peak limiter under its ceiling, tried again until both hold (the
limiter takes a little loudness away; more gain puts it back).

The limiter knows the whole mix in advance (a render is made offline), so its look-ahead
is free: the gain a true peak needs is held around it and smoothed both ways, starting to
come down tens of milliseconds before the peak and going back up as slowly: a gain that
moves at the pace of syllables, not of the waveform, does not distort it. The smoothing
never lets the gain at a peak exceed what that peak needs (``_limiter_gain``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import minimum_filter1d, uniform_filter1d

from audio import loudness
from audio.presets import Preset

# Under the ceiling by this much: other meters oversample with other filters (ffmpeg's
# ebur128 reads up to ~0.1 dB higher than ours), and 24-bit rounding adds a little.
MARGIN_DB = 0.2
ATTACK_S, RELEASE_S, HOLD_S = 0.010, 0.030, 0.010
TOLERANCE_LU = 0.05  # close enough to the target to stop trying
MAX_PASSES = 8


@dataclass(frozen=True)
class Mastered:
    samples: np.ndarray  # float32 mono
    gain_db: float  # the loudness gain, before the limiter
    limited_db: float  # the most the limiter took away anywhere
    measured: loudness.Measured


def master(samples: np.ndarray, rate: int, preset: Preset) -> Mastered:
    """``samples`` at the preset's loudness (within ``TOLERANCE_LU`` when the limiter leaves
    room for it; always well within 0.5 LU for speech and music) with no true peak above its
    ceiling. A silent mix is left silent."""
    before = loudness.integrated(samples, rate)
    if not np.isfinite(before):
        return Mastered(samples.astype(np.float32), 0.0, 0.0, loudness.measured(samples, rate))
    envelope = loudness.peak_envelope(samples, rate)  # scales with the gain: measured once
    ceiling = 10 ** ((preset.true_peak_dbtp - MARGIN_DB) / 20)
    gain_db = preset.loudness_lufs - before
    for _ in range(MAX_PASSES):
        out = None  # the last pass's mix is not kept while this one's is made
        gain = 10 ** (gain_db / 20)
        limiter = _limiter_gain(envelope * gain, ceiling, rate)
        limited_db = float(-20 * np.log10(limiter.min()))
        # out = samples * (gain * limiter), in the limiter's array: the same products
        out = limiter
        out *= gain
        out *= samples
        del limiter
        error = preset.loudness_lufs - loudness.integrated(out, rate)
        if abs(error) <= TOLERANCE_LU:
            break
        gain_db += error
    del envelope
    measured = loudness.measured(out, rate)
    if measured.true_peak_dbtp > preset.true_peak_dbtp - MARGIN_DB / 2:
        # The gain curve also shapes what lies between samples: rarely, a hair over.
        out = out * 10 ** ((preset.true_peak_dbtp - MARGIN_DB - measured.true_peak_dbtp) / 20)
        measured = loudness.measured(out, rate)
    return Mastered(
        samples=out.astype(np.float32),
        gain_db=float(gain_db),
        limited_db=limited_db,
        measured=measured,
    )


def _limiter_gain(envelope: np.ndarray, ceiling: float, rate: int) -> np.ndarray:
    """The gain over time that keeps ``envelope`` (per-sample true peaks) under ``ceiling``.
    What each sample needs is held for the smoothing's whole reach on both sides (a minimum
    filter), then smoothed by two moving averages (attack, then release): every average
    that covers a peak only takes in gains at or below what the peak needs."""
    # min(1, ceiling / max(envelope, 1e-12)), in ``envelope``'s array (the caller's to give)
    needed = np.maximum(envelope, 1e-12, out=envelope)
    np.divide(ceiling, needed, out=needed)
    np.minimum(1.0, needed, out=needed)
    if needed.min() >= 1.0:
        return needed
    attack = 2 * round(ATTACK_S * rate / 2) + 1
    release = 2 * round(RELEASE_S * rate / 2) + 1
    reach = attack // 2 + release // 2 + round(HOLD_S * rate)
    held = minimum_filter1d(needed, size=2 * reach + 1, mode="nearest")
    del needed
    smooth = uniform_filter1d(held, size=attack, mode="nearest", output=held)
    return uniform_filter1d(smooth, size=release, mode="nearest")
