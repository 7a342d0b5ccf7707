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


def track_ends(tracks: list[tuple[str, str, float]], *, language: str) -> list[float]:
    """When each track of a voice script ends, in seconds from the start: ``tracks`` are
    ``(text, playAfter, overlap)`` with ``playAfter`` either "start" or "track-N" of an
    earlier track.

    Each track starts when the one it follows ends, minus its overlap (a negative overlap
    is a gap); a track after "start" starts at 0.
    """
    ends: list[float] = []
    for text, play_after, overlap in tracks:
        if play_after == "start":
            start = 0.0
        else:
            start = max(ends[int(play_after.removeprefix("track-"))] - overlap, 0.0)
        ends.append(start + spoken_seconds(text, language=language))
    return ends


def script_seconds(tracks: list[tuple[str, str, float]], *, language: str) -> float:
    """Estimated length of a voice script (``track_ends``): it ends with its last line."""
    return round(max(track_ends(tracks, language=language), default=0.0), 1)
