"""Whether a script says a fact the brief asked for (a brand, a price, a URL, a call to
action), as a person would hear it: case, accents, punctuation and spacing aside, and a
number the same number in any digits or grouping ("1,299", "1.299", "1 299", Thai
"๑,๒๙๙", Arabic-Indic "١٢٩٩", Devanagari "१२९९", fullwidth digits).

A fact with a number is said when each of its numbers is, as a whole number: the
currency or unit around it is written many ways ("฿149", "149 บาท", "149 baht"). A fact
without one is said when its words are, in order.
"""

from __future__ import annotations

import re
import unicodedata

# A group separator between thousands: "1,299", "1.299", "1 299", "1'299", "1 299".
_GROUPED = re.compile(r"(?<=\d)[,.'\u00a0\u202f\u2009 ](?=\d{3}(?!\d))")
# A decimal comma: "12,99" is 12.99.
_DECIMAL_COMMA = re.compile(r"(?<=\d),(?=\d{1,2}(?!\d))")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_URL_PREFIX = re.compile(r"^(?:https?://)?(?:www\.)?", re.IGNORECASE)


def folded(text: str) -> str:
    """``text`` as compared: compatibility forms (fullwidth) unified, every decimal digit
    as ASCII, accents of Latin letters dropped, case folded, numbers ungrouped, loose
    punctuation and repeated spaces gone."""
    text = unicodedata.normalize("NFKC", text)
    text = "".join(_ascii_digit(ch) for ch in text)
    text = _without_latin_accents(text).casefold()
    text = _DECIMAL_COMMA.sub(".", _GROUPED.sub("", text))
    return " ".join(_without_loose_punctuation(text).split())


def said(fact: str, script: str) -> bool:
    """Whether ``script`` says ``fact`` (see the module's docstring)."""
    text = folded(script)
    wanted = folded(_URL_PREFIX.sub("", fact.strip()))
    numbers = _NUMBER.findall(wanted)
    if numbers:
        return all(re.search(rf"(?<![\d.]){re.escape(n)}(?![\d]|\.\d)", text) for n in numbers)
    if not wanted:
        return True
    # A Latin word is a whole word ("Go" is not said by "Google").
    pattern = re.escape(wanted)
    if wanted[0].isascii() and wanted[0].isalnum():
        pattern = r"(?<!\w)" + pattern
    if wanted[-1].isascii() and wanted[-1].isalnum():
        pattern += r"(?!\w)"
    if re.search(pattern, text):
        return True
    # Scripts written without spaces (Thai, Chinese, Japanese) may space a phrase
    # differently from the fact: such a fact is compared without spaces as well.
    spaceless = not wanted.replace(" ", "").isascii()
    return spaceless and wanted.replace(" ", "") in text.replace(" ", "")


def _without_loose_punctuation(text: str) -> str:
    """Punctuation and symbols become spaces, except between two letters or digits
    ("spotify.com/th" keeps its dot and slash). Thai vowel and tone marks are marks, not
    punctuation: they stay."""
    chars = list(text)
    for n, ch in enumerate(chars):
        if unicodedata.category(ch)[0] in "PS":
            inside = 0 < n < len(chars) - 1 and _wordish(chars[n - 1]) and _wordish(chars[n + 1])
            if not inside:
                chars[n] = " "
    return "".join(chars)


def _wordish(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LNM"


def _ascii_digit(ch: str) -> str:
    if ch.isdigit() and not ch.isascii():
        value = unicodedata.decimal(ch, None)
        return str(value) if value is not None else ch
    return ch


def _without_latin_accents(text: str) -> str:
    """Accents dropped from Latin letters only: Thai vowels and tone marks, also combining
    marks, are part of the word."""
    out: list[str] = []
    for ch in unicodedata.normalize("NFD", text):
        if unicodedata.combining(ch) and out and out[-1] < "\u0250":
            continue
        out.append(ch)
    return unicodedata.normalize("NFC", "".join(out))
