"""Text shortened for one-line display: at a word boundary, with an ellipsis."""

from __future__ import annotations

import unicodedata

ELLIPSIS = "…"
# A word boundary this far back from the limit is still worth cutting at; further back,
# the text is a script written without spaces (Thai, Chinese) and is cut at the limit.
_BOUNDARY_WINDOW = 0.6


def clip_words(text: str, limit: int) -> str:
    """``text`` on one line if it fits in ``limit`` characters, else its longest run of whole words
    that fits with an ellipsis after it, never splitting a word (or, in a script without
    spaces, a character from its combining marks)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    room = max(limit - len(ELLIPSIS), 1)
    cut = text.rfind(" ", 0, room + 1)
    if cut < room * _BOUNDARY_WINDOW:
        cut = room
        while cut > 1 and unicodedata.category(text[cut]).startswith("M"):
            cut -= 1
    return text[:cut].rstrip(" ,;:.-\u2013\u2014") + ELLIPSIS
