"""How long a script takes to say: a planning estimate, so the model can fit the ad."""

from __future__ import annotations

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


def spoken_seconds(text: str, *, language: str) -> float:
    """Estimated seconds to read ``text`` aloud in ``language`` (canonical code)."""
    if language in CHARS_PER_SECOND:
        letters = sum(1 for ch in text if not ch.isspace() and ch.isalnum())
        return letters / CHARS_PER_SECOND[language]
    words = len(text.split())
    return words / WORDS_PER_SECOND.get(language, DEFAULT_WORDS_PER_SECOND)
