"""A synthetic guide voice: eSpeak NG, the library and its data as ``espeakng-loader``
ships them (pip only, Thai included), driven through its C API with ctypes.

Why our own few lines of ctypes: the Python packages named for eSpeak either run the
``espeak-ng`` program (a system package: ``espeakng``), only turn text into phonemes
(``phonemizer``, ``espeak-phonemizer``), or have not been kept up (``py-espeak-ng``,
2019). The library keeps global state and is not thread-safe: one lock around every
synthesis.
"""

from __future__ import annotations

import ctypes
import threading
from functools import cache

import espeakng_loader
import numpy as np

AUDIO_OUTPUT_SYNCHRONOUS = 2
ESPEAK_CHARS_UTF8 = 1
ESPEAK_RATE = 1
DEFAULT_WPM = 175  # eSpeak's own default reading speed
# Words a minute per language at speed 1.0, so the guide voice reads at about the pace
# the script was planned for (adstudio.speech): eSpeak's 175 read the demo's lines from
# 0.77 (French) to 3.2 (Japanese) times the planned length; 175 x that ratio, within
# eSpeak's 80-450, brings each near 1 (docs/BENCHMARKS.md, "Scratch track").
WPM = {
    "en": 149,
    "th": 326,
    "id": 200,
    "vi": 144,
    "ja": 450,
    "zh": 238,
    "ko": 263,
    "es": 191,
    "pt": 196,
    "de": 152,
    "fr": 135,
}
_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.POINTER(ctypes.c_short), ctypes.c_int, ctypes.c_void_p
)
_lock = threading.Lock()
_chunks: list[np.ndarray] = []


class SpeechUnavailable(RuntimeError):
    """eSpeak NG could not be loaded or has no voice for the language."""


@_CALLBACK
def _collect(wav, count, events) -> int:
    if count > 0 and wav:
        _chunks.append(np.ctypeslib.as_array(wav, shape=(count,)).copy())
    return 0  # go on


@cache
def _engine() -> tuple[ctypes.CDLL, int]:
    library = ctypes.CDLL(espeakng_loader.get_library_path())
    library.espeak_Initialize.restype = ctypes.c_int
    library.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    rate = library.espeak_Initialize(
        AUDIO_OUTPUT_SYNCHRONOUS, 0, espeakng_loader.get_data_path().encode(), 0
    )
    if rate <= 0:
        raise SpeechUnavailable(f"eSpeak NG did not start (espeak_Initialize returned {rate})")
    library.espeak_SetSynthCallback(_collect)
    library.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    library.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    library.espeak_Synth.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.c_void_p,
    ]
    return library, rate


def sample_rate() -> int:
    return _engine()[1]


def synthesize(text: str, *, language: str, speed: float = 1.0) -> np.ndarray:
    """``text`` read in ``language`` (an ISO 639-1 code) at ``speed`` (1.0: the
    language's ``WPM``), as float32 samples in -1..1 at ``sample_rate()``."""
    library, _ = _engine()
    encoded = text.encode("utf-8") + b"\0"
    with _lock:
        if library.espeak_SetVoiceByName(_voice(language).encode()) != 0:
            raise SpeechUnavailable(f"eSpeak NG has no voice for {language!r}")
        wpm = WPM.get(language, DEFAULT_WPM) * speed
        library.espeak_SetParameter(ESPEAK_RATE, max(80, min(450, round(wpm))), 0)
        _chunks.clear()
        status = library.espeak_Synth(encoded, len(encoded), 0, 0, 0, ESPEAK_CHARS_UTF8, None, None)
        samples = np.concatenate(_chunks) if _chunks else np.zeros(0, dtype=np.int16)
        _chunks.clear()
    if status != 0:
        raise SpeechUnavailable(f"eSpeak NG could not read the text (espeak_Synth: {status})")
    return _trimmed((samples.astype(np.float32) / 32768.0).clip(-1.0, 1.0))


SILENCE = 1e-3  # below this a sample is silence (eSpeak's pauses are exact zeros)


def _trimmed(samples: np.ndarray) -> np.ndarray:
    """Without the silence eSpeak puts before and after: a track placed at a time starts
    speaking at that time."""
    loud = np.flatnonzero(np.abs(samples) > SILENCE)
    return samples[loud[0] : loud[-1] + 1] if loud.size else samples[:0]


# eSpeak's names where they differ from the language's code. It has no Tagalog voice;
# the Indonesian one reads Tagalog's Latin spelling closest of those it has.
_VOICES = {"zh": "cmn", "pt": "pt-br", "tl": "id"}


def _voice(language: str) -> str:
    return _VOICES.get(language, language)
