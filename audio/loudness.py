"""Loudness as the broadcast standards measure it: integrated loudness (ITU-R BS.1770-4,
pyloudnorm's K-weighting filters), the maximum momentary and short-term loudness and the
loudness range (EBU Tech 3341, 3342), and true peak (BS.1770-4 Annex 2: 4x oversampled).

Our own gating over pyloudnorm's filters: the mastering measures a mix several times, and
pyloudnorm's block loops in Python cost more than the mastering itself. The figures agree
with pyloudnorm's to a hundredth of a LU (tests/audio/test_mastering.py)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
import pyloudnorm
from scipy.signal import firwin, lfilter, upfirdn

ABSOLUTE_GATE = -70.0  # LUFS
OVERSAMPLING = 4  # BS.1770-4 Annex 2 at 48 kHz; lower rates to at least 192 kHz


@dataclass(frozen=True)
class Measured:
    """A mix's figures, as the bext chunk (EBU Tech 3285 v2) and the render report them."""

    integrated_lufs: float
    true_peak_dbtp: float
    range_lu: float
    momentary_max_lufs: float
    short_term_max_lufs: float


# A filter's state under this is dropped in silence: what it would still put out squares
# to exactly 0.0 in float64, so every block's power is what it was with it.
_NEGLIGIBLE_STATE = 1e-170
_CHUNK = 4_800  # samples: an IIR's state decays by far less than 1e-100 over one


def k_weighted(samples: np.ndarray, rate: int) -> np.ndarray:
    """The signal through BS.1770's K-weighting (pyloudnorm's two biquads)."""
    out = np.asarray(samples, dtype=np.float64)  # no copy of a float64 mix: read, not written
    for stage in (
        pyloudnorm.IIRfilter(4.0, 1 / np.sqrt(2), 1500.0, rate, "high_shelf"),
        pyloudnorm.IIRfilter(0.0, 0.5, 38.0, rate, "high_pass"),
    ):
        out = _filtered(stage.b, stage.a, out)
        out *= stage.passband_gain
    return out


def _filtered(b: np.ndarray, a: np.ndarray, signal: np.ndarray) -> np.ndarray:
    """``lfilter(b, a, signal)``, but for the tail it would ring on into silence forever.

    After a sound, over exact zeros (a mix's silence), a biquad's state decays into
    subnormal floats and stays there, cycling by rounding: arithmetic on subnormals is ~50
    times slower, and a mix that ends in silence took seconds to measure. Filtered a run
    of chunks at a time (the state carried, the same arithmetic), a silent chunk whose
    state has decayed past what squares to anything is all zeros, and the state starts
    again from 0.
    """
    out = np.empty_like(signal)
    state = np.zeros(max(len(a), len(b)) - 1)
    chunks = -(-len(signal) // _CHUNK)
    sounding = np.zeros(chunks * _CHUNK, dtype=bool)
    sounding[: len(signal)] = signal != 0
    sounding = sounding.reshape(chunks, _CHUNK).any(axis=1)
    chunk = 0
    while chunk < chunks:
        if sounding[chunk]:  # the whole run of sounding chunks in one call
            rest = sounding[chunk:]
            end = chunk + (len(rest) if rest.all() else int(np.argmin(rest)))
        elif np.abs(state).max() < _NEGLIGIBLE_STATE:
            out[chunk * _CHUNK : (chunk + 1) * _CHUNK] = 0.0
            state[:] = 0.0
            chunk += 1
            continue
        else:
            end = chunk + 1
        part = slice(chunk * _CHUNK, end * _CHUNK)
        out[part], state = lfilter(b, a, signal[part], zi=state)
        chunk = end
    return out


def _block_powers(weighted: np.ndarray, rate: int, block_s: float, step_s: float) -> np.ndarray:
    """Mean square of each block (BS.1770's z), as pyloudnorm cuts them."""
    count = int(np.round((len(weighted) / rate - block_s) / step_s)) + 1
    if count < 1:
        return np.zeros(0)
    sums = np.empty(len(weighted) + 1)  # 0, then the running sum of the squares
    sums[0] = 0.0
    squares = weighted * weighted
    np.cumsum(squares, out=sums[1:])
    del squares
    starts = (np.arange(count) * step_s * rate).astype(np.int64)
    ends = np.minimum(starts + int(block_s * rate), len(weighted))
    return (sums[ends] - sums[starts]) / (block_s * rate)


def _lufs(power) -> np.ndarray | float:
    with np.errstate(divide="ignore"):
        return -0.691 + 10 * np.log10(power)


def integrated(samples: np.ndarray, rate: int, *, weighted: np.ndarray | None = None) -> float:
    """Integrated loudness, LUFS (-inf for silence or less than a 400 ms block)."""
    weighted = k_weighted(samples, rate) if weighted is None else weighted
    powers = _block_powers(weighted, rate, 0.4, 0.1)
    gated = powers[_lufs(powers) >= ABSOLUTE_GATE]
    if gated.size == 0:
        return float("-inf")
    relative = _lufs(gated.mean()) - 10
    kept = gated[_lufs(gated) > relative]
    return float(_lufs(kept.mean())) if kept.size else float("-inf")


@cache
def _interpolator(factor: int) -> np.ndarray:
    """A 49-tap low-pass for ``factor`` x oversampling (BS.1770-4's example has 48): odd,
    so its delay is a whole number of samples."""
    return firwin(12 * factor + 1, 1 / factor, window=("kaiser", 8.0)) * factor


def peak_envelope(samples: np.ndarray, rate: int) -> np.ndarray:
    """Per sample, the largest magnitude of the oversampled signal from it to the next:
    what true peak sees, where the sample peak misses what lies between samples.
    Oversampled a second at a time, each piece with the taps' reach of context on both
    sides: the same sums as the whole signal's (bit for bit), without holding the whole
    signal four times over (a 30 s mix: 46 MB of float64)."""
    factor = max(OVERSAMPLING, int(np.ceil(192_000 / rate)))
    taps = _interpolator(factor)
    delay = (len(taps) - 1) // 2
    reach = -(-len(taps) // factor) + 1  # input samples a piece's outputs depend on
    signal = np.asarray(samples, dtype=np.float64)  # read, never written
    peaks = np.abs(signal)
    for start in range(0, len(signal), rate):
        end = min(len(signal), start + rate)
        low, high = max(0, start - reach), min(len(signal), end + reach)
        first = (start - low) * factor + delay
        up = np.abs(upfirdn(taps, signal[low:high], factor)[first : first + factor * (end - start)])
        piece = peaks[start:end]
        for phase in range(factor):  # faster than a max over an axis of 4
            np.maximum(piece, up[phase::factor], out=piece)
    return peaks


def true_peak(samples: np.ndarray, rate: int) -> float:
    """True peak, dBTP (-inf for silence)."""
    peak = float(peak_envelope(samples, rate).max()) if len(samples) else 0.0
    return 20 * np.log10(peak) if peak > 0 else float("-inf")


def loudness_range(weighted: np.ndarray, rate: int) -> float:
    """EBU Tech 3342: the spread (10th to 95th percentile) of the short-term loudness, gated
    at -70 LUFS and 20 LU under their mean; 0 for a mix too short or quiet to have one."""
    short = _lufs(_block_powers(weighted, rate, 3.0, 0.1))
    short = short[short >= ABSOLUTE_GATE]
    if short.size == 0:
        return 0.0
    mean = 10 * np.log10(np.mean(10 ** (short / 10)))
    kept = short[short >= mean - 20]
    return float(np.percentile(kept, 95) - np.percentile(kept, 10)) if kept.size else 0.0


def measured(samples: np.ndarray, rate: int) -> Measured:
    peak_dbtp = true_peak(samples, rate)  # before the weighted signal: not both held at once
    weighted = k_weighted(samples, rate)

    def loudest(block_s: float) -> float:
        powers = _block_powers(weighted, rate, block_s, 0.1)
        return float(_lufs(powers.max())) if powers.size else float("-inf")

    return Measured(
        integrated_lufs=integrated(samples, rate, weighted=weighted),
        true_peak_dbtp=peak_dbtp,
        range_lu=loudness_range(weighted, rate),
        momentary_max_lufs=loudest(0.4),
        short_term_max_lufs=loudest(3.0),
    )
