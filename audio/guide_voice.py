"""A synthetic guide voice: eSpeak NG, the library and its data as ``espeakng-loader``
ships them (pip only, Thai included), driven through its C API with ctypes.

Why our own few lines of ctypes: the Python packages named for eSpeak either run the
``espeak-ng`` program (a system package: ``espeakng``), only turn text into phonemes
(``phonemizer``, ``espeak-phonemizer``), or have not been kept up (``py-espeak-ng``,
2019). The library keeps global state and is not thread-safe: one lock around every
synthesis.

Each cast voice reads with a guide voice of its own (``guide_voice``): one of eSpeak NG's
variants (``voices/!v``) for the catalogue voice's gender and age, and a pitch. The same
inputs give the same samples: eSpeak's state carried from one synthesis to the next is
neutralised (``_variants``) and its noise generator seeded before each one.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import shutil
import tempfile
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import espeakng_loader
import numpy as np

AUDIO_OUTPUT_SYNCHRONOUS = 2
ESPEAK_CHARS_UTF8 = 1
ESPEAK_RATE = 1
ESPEAK_PITCH = 3  # 0-100, 50 the voice's own
RAND_SEED = 1  # eSpeak's noise (breath, fricatives' jitter), the same for every synthesis
DEFAULT_WPM = 175  # eSpeak's own default reading speed
# Words a minute per language at speed 1.0, so the guide voice reads at about the pace
# the script was planned for (adstudio.speaking_time): the demo director's sentences,
# joined into tracks as it writes them, read in 0.90-1.05 of the planned time (Japanese
# 1.17: eSpeak's 450 is not fast enough). The last ten read at eSpeak's own 175 until
# they were set to 1.0: from 0.86 of the plan (Czech) to 1.34 and 1.36 (Turkish, Arabic,
# whose scratch tracks ran past their slots). `python -m benchmarks.guide_voice_pace` prints
# each language's pace and the rate that reads it at ``--target`` (docs/benchmarks/
# HISTORY.md, "Scratch tracks measured in every language").
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
    "ar": 235,
    "cs": 152,
    "hi": 162,
    "it": 186,
    "nl": 157,
    "pl": 178,
    "ro": 182,
    "sv": 162,
    "tl": 179,
    "tr": 225,
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


@dataclass(frozen=True)
class GuideVoice:
    """How one cast voice is read: an eSpeak NG variant (``voices/!v``) and a pitch."""

    variant: str
    pitch: int = 50  # espeakPITCH, 0-100


# eSpeak NG's variants by gender and age, in the spirit of its own choice by properties
# (voices.c, SelectVoice: ``variants_male``/``variants_female``, the old ones first): m1
# and f1 are its aged voices, grandma and grandpa its old ones. Pitch moves within a
# group so two voices of the same kind in one ad still differ.
_VARIANTS = {
    ("female", "young"): ("f2", "f4", "f5"),
    ("female", "middle aged"): ("f2", "f3", "f4"),
    ("female", "old"): ("f1", "grandma"),
    ("male", "young"): ("m2", "m3", "m6", "m7"),
    ("male", "middle aged"): ("m3", "m4", "m5", "m6"),
    ("male", "old"): ("m1", "grandpa"),
}
_EITHER = ("m3", "f3", "m6", "f4")  # a neutral or unknown voice: eSpeak's variants_either
_PITCH = {"young": 60, "middle aged": 50, "old": 40}
DEFAULT_VOICE = GuideVoice("m3")


def guide_voice(voice_id: str, *, gender: str = "", age: str = "") -> GuideVoice:
    """The guide voice of a cast voice: its variant from the catalogue's gender and age, one
    of the group chosen and the pitch moved by the voice id (sha256: the same every run)."""
    digest = hashlib.sha256(str(voice_id).encode()).digest()
    age = age if age in _PITCH else "middle aged"
    group = _VARIANTS.get((gender, age), _EITHER)
    pitch = _PITCH[age] + digest[1] % 13 - 6
    return GuideVoice(group[digest[0] % len(group)], pitch)


# Each variant as shipped, with what eSpeak NG carries from one synthesis to the next
# turned off (wavegen.c, 1.52): the flutter's phase (a static index never reset: a voiced
# frame ends at a quiet point of the waveform, so the pitch drift moved every later sample
# and changed the length) and the roughness, which dips every n-th glottal cycle counted
# across syntheses ("roughness 8" is past its table: none).
_STEADY = "\nflutter 0\nroughness 8\n"
VARIANT_PREFIX = "adstudio-"


def _variants() -> str:
    """A data folder of eSpeak NG's own files (linked) with our steady variants beside its
    variants; its path. eSpeak reads variants only from ``<data>/voices/!v``, and the
    installed package's folder is not ours to write, so each process links its own."""
    shipped = Path(espeakng_loader.get_data_path())
    folder = Path(tempfile.mkdtemp(prefix="adstudio-espeak-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    data = folder / "espeak-ng-data"
    data.mkdir()
    for entry in shipped.iterdir():
        if entry.name != "voices":
            (data / entry.name).symlink_to(entry)
    for entry in (shipped / "voices").iterdir():
        if entry.name != "!v":
            (data / "voices").mkdir(exist_ok=True)
            (data / "voices" / entry.name).symlink_to(entry)
    ours = data / "voices" / "!v"
    ours.mkdir(parents=True)
    for variant in (shipped / "voices" / "!v").iterdir():
        (ours / variant.name).symlink_to(variant)
    for name in {name for group in (*_VARIANTS.values(), _EITHER) for name in group}:
        shipped_text = (shipped / "voices" / "!v" / name).read_text(encoding="utf-8")
        (ours / f"{VARIANT_PREFIX}{name}").write_text(shipped_text + _STEADY, encoding="utf-8")
    return str(data)


@cache
def _engine() -> tuple[ctypes.CDLL, int]:
    library = ctypes.CDLL(espeakng_loader.get_library_path())
    library.espeak_Initialize.restype = ctypes.c_int
    library.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    rate = library.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, _variants().encode(), 0)
    if rate <= 0:
        raise SpeechUnavailable(f"eSpeak NG did not start (espeak_Initialize returned {rate})")
    library.espeak_SetSynthCallback(_collect)
    library.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
    library.espeak_SetParameter.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    library.espeak_ng_SetRandSeed.argtypes = [ctypes.c_long]
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


def synthesize(
    text: str, *, language: str, speed: float = 1.0, voice: GuideVoice = DEFAULT_VOICE
) -> np.ndarray:
    """``text`` read in ``language`` (an ISO 639-1 code) at ``speed`` (1.0: the
    language's ``WPM``) by ``voice``, as float32 samples in -1..1 at ``sample_rate()``;
    the same samples for the same arguments, whatever was read before."""
    library, _ = _engine()
    encoded = text.encode("utf-8") + b"\0"
    name = f"{_voice(language)}+{VARIANT_PREFIX}{voice.variant}"
    with _lock:
        if library.espeak_SetVoiceByName(name.encode()) != 0:
            raise SpeechUnavailable(f"eSpeak NG has no voice for {language!r}")
        wpm = WPM.get(language, DEFAULT_WPM) * speed
        library.espeak_SetParameter(ESPEAK_RATE, max(80, min(450, round(wpm))), 0)
        library.espeak_SetParameter(ESPEAK_PITCH, max(0, min(100, voice.pitch)), 0)
        library.espeak_ng_SetRandSeed(RAND_SEED)
        _chunks.clear()
        status = library.espeak_Synth(encoded, len(encoded), 0, 0, 0, ESPEAK_CHARS_UTF8, None, None)
        samples = np.concatenate(_chunks) if _chunks else np.zeros(0, dtype=np.int16)
        _chunks.clear()
    if status != 0:
        raise SpeechUnavailable(f"eSpeak NG could not read the text (espeak_Synth: {status})")
    return trimmed((samples.astype(np.float32) / 32768.0).clip(-1.0, 1.0))


SILENCE = 1e-3  # below this a sample is silence (eSpeak's pauses are exact zeros)


def trimmed(samples: np.ndarray) -> np.ndarray:
    """Without the silence eSpeak puts before and after: a track placed at a time starts
    speaking at that time."""
    loud = np.flatnonzero(np.abs(samples) > SILENCE)
    return samples[loud[0] : loud[-1] + 1] if loud.size else samples[:0]


# eSpeak's names where they differ from the language's code. It has no Tagalog voice;
# the Indonesian one reads Tagalog's Latin spelling closest of those it has.
_VOICES = {"zh": "cmn", "pt": "pt-br", "tl": "id"}


def _voice(language: str) -> str:
    return _VOICES.get(language, language)
