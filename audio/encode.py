"""A master's other files: Ogg/Opus (libsndfile), MP3 (LAME, through lameenc) and 32-bit
float WAV for the stems. A lossy codec's decoded waveform can overshoot what it was given;
each lossy file is decoded again and, should it reach full scale, made again a little
quieter, so no player clips it."""

from __future__ import annotations

import io
import struct
from collections.abc import Callable

import lameenc
import numpy as np
import soundfile

MP3_KBPS = 128
MP3_QUALITY = 5  # LAME's 0 (best, slowest) to 9: 5 costs a third of 2's time
# A decoded lossy file stays at or under this: -0.1 dBFS.
FULL_SCALE_LIMIT = 10 ** (-0.1 / 20)
RETRIES = 3


def ogg_opus(samples: np.ndarray, rate: int) -> bytes:
    def encode(signal: np.ndarray) -> bytes:
        out = io.BytesIO()
        soundfile.write(out, signal.clip(-1, 1), rate, format="OGG", subtype="OPUS")
        return out.getvalue()

    return _under_full_scale(encode, samples)


def mp3(samples: np.ndarray, rate: int) -> bytes:
    def encode(signal: np.ndarray) -> bytes:
        encoder = lameenc.Encoder()
        encoder.set_bit_rate(MP3_KBPS)
        encoder.set_in_sample_rate(rate)
        encoder.set_channels(1)
        encoder.set_quality(MP3_QUALITY)
        pcm = np.clip(np.round(signal * 32767), -32768, 32767).astype("<i2").tobytes()
        return bytes(encoder.encode(pcm) + encoder.flush())

    return _under_full_scale(encode, samples)


def float_wav(samples: np.ndarray, rate: int) -> bytes:
    """Mono 32-bit float WAV (a stem may go past full scale before the limiter; float keeps
    it). Our few bytes rather than libsndfile's, whose PEAK chunk carries the time it was
    written: the same stem gives the same file."""
    data = samples.astype("<f4").tobytes()
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)  # WAVE_FORMAT_IEEE_FLOAT
    chunks = (
        b"fmt " + struct.pack("<I", len(fmt)) + fmt
        + b"fact" + struct.pack("<II", 4, len(samples))  # required of a non-PCM format
        + b"data" + struct.pack("<I", len(data)) + data
    )  # fmt: skip
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks


def decoded_peak(data: bytes) -> float:
    samples, _ = soundfile.read(io.BytesIO(data), dtype="float32")
    return float(np.abs(samples).max()) if samples.size else 0.0


def _under_full_scale(encode: Callable[[np.ndarray], bytes], samples: np.ndarray) -> bytes:
    signal = samples.astype(np.float32)
    for _ in range(RETRIES):
        data = encode(signal)
        peak = decoded_peak(data)
        if peak <= FULL_SCALE_LIMIT:
            return data
        signal = signal * np.float32(0.98 * FULL_SCALE_LIMIT / peak)
    return encode(signal * np.float32(0.5))  # a codec that keeps overshooting: half as loud
