"""How long a script takes to say: a planning estimate, so the model can fit the ad."""

from __future__ import annotations

import re

# Conversational read speeds for ad copy. Languages written without spaces are measured
# in characters (Thai, Chinese, Japanese); all others in words.
CHARS_PER_SECOND = {"th": 12.0, "zh": 4.5, "ja": 7.5}
WORDS_PER_SECOND = {
    "es": 2.9,
    "it": 2.8,
    "fr": 2.7,
    "pt": 2.7,
    "ro": 2.6,
    "de": 2.2,
    "pl": 2.2,
    "cs": 2.2,
    "ru": 2.2,
    "id": 2.3,
    "vi": 3.0,
    "ko": 2.5,
}
DEFAULT_WORDS_PER_SECOND = 2.5
# A Latin-script word inside a Chinese or Thai line ("Spotify Premium") is read as a
# word, not letter by letter: counted by its letters, "认识一下Spotify Premium家庭方案" was
# estimated at 4.9 s and read by the guide voice in 2.1 s (now 2.6 s), which made a
# zh-TW script that names its brand often look far longer than it sounds. The Japanese
# guide voice spells Latin letters out, so Japanese still counts them.
LATIN_AS_WORDS = frozenset({"th", "zh"})
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9'\u2019]*")


def spoken_seconds(text: str, *, language: str, speed: float = 1.0) -> float:
    """Estimated seconds to read ``text`` aloud in ``language`` (canonical code) at
    ``speed`` (a voice track's: 2.0 reads in half the time; anything not above 0 is 1.0)."""
    speed = speed if speed and speed > 0 else 1.0
    if language in CHARS_PER_SECOND:
        latin_words = len(_LATIN_WORD.findall(text)) if language in LATIN_AS_WORDS else 0
        rest = _LATIN_WORD.sub(" ", text) if latin_words else text
        letters = sum(1 for ch in rest if not ch.isspace() and ch.isalnum())
        seconds = letters / CHARS_PER_SECOND[language] + latin_words / DEFAULT_WORDS_PER_SECOND
        return seconds / speed
    words = len(text.split())
    return words / WORDS_PER_SECOND.get(language, DEFAULT_WORDS_PER_SECOND) / speed
