"""Which of the two Chinese scripts a text is written in: Traditional characters for
Taiwan, Hong Kong and Macau, Simplified for the mainland, Singapore and Malaysia.

The characters are told apart by ``hanzidentifier`` (CC-CEDICT's lists of the characters
each script uses); a character both scripts share (most of them) says nothing.
"""

from __future__ import annotations

from typing import Literal

import hanzidentifier

Script = Literal["traditional", "simplified"]

TRADITIONAL_MARKETS = frozenset({"TW", "HK", "MO"})
SIMPLIFIED_MARKETS = frozenset({"CN", "SG", "MY"})


def expected_script(market: str) -> Script | None:
    """The script a Chinese ad for ``market`` is written in; None where either will do."""
    market = market.strip().upper()
    if market in TRADITIONAL_MARKETS:
        return "traditional"
    if market in SIMPLIFIED_MARKETS:
        return "simplified"
    return None


def other_script_characters(text: str, script: Script) -> list[str]:
    """The characters of ``text`` that only the other script uses, each once, in order."""
    if script == "traditional":
        wrong = [ch for ch in text if _only(ch, hanzidentifier.SIMPLIFIED)]
    else:
        wrong = [ch for ch in text if _only(ch, hanzidentifier.TRADITIONAL)]
    return list(dict.fromkeys(wrong))


def _only(ch: str, script: int) -> bool:
    return ch.isalpha() and not ch.isascii() and hanzidentifier.identify(ch) == script
