"""Which language a script is written in, by py3langid (langid.py's model, offline), told
to choose among the languages the project knows: an ad's script is in one of them, and a
free choice among 97 reads a short English line as Nigerian Pidgin.

A script is judged line by line (``line_verdicts``): one English line of five in a Thai
ad is a wrong line, however Thai the whole reads. A short line ("¡Trae a todos!") or one
that is little more than the brand ("Spotify Premium!") is not judged: too few letters
for the model to tell close languages apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from py3langid.langid import MODEL_FILE, LanguageIdentifier

from adstudio.languages import LANGUAGES

# Letters a line needs, its brand's words left out, before it is judged. Chinese,
# Japanese, Korean and Thai say more in fewer letters.
MIN_LETTERS = 20
MIN_LETTERS_DENSE = 10
DENSE = frozenset({"th", "zh", "ja", "ko"})
# A line is in the ad's language when the model ranks it among its first three with at
# least this probability: close neighbours (Indonesian and Malay, Spanish and Galician)
# trade places on a short line, but an English line never ranks Thai or Spanish there.
TOP = 3
MIN_PROBABILITY = 0.05
_WORD = re.compile(r"\w+")


@cache
def _identifier() -> LanguageIdentifier:
    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    known = {code for code, _name, _aliases in LANGUAGES}
    identifier.set_languages(sorted(known & set(identifier.nb_classes)))
    return identifier


def script_language(text: str) -> tuple[str, float]:
    """The ISO 639-1 code ``text`` is most likely written in, and how likely (0..1)."""
    code, probability = _identifier().classify(text)
    return code, float(probability)


@dataclass(frozen=True)
class LineVerdict:
    ref: str  # the track's id
    judged: bool  # False: too short, or the brand alone
    found: str = ""  # the most likely language
    probability: float = 0.0
    in_language: bool = True

    def describe(self, language: str) -> str:
        return f"{self.ref} is written in {self.found} (p={self.probability:.2f}), not {language}"


def line_verdicts(
    lines: list[tuple[str, str]], *, language: str, brand: str = ""
) -> list[LineVerdict]:
    """Each ``(ref, text)`` line judged on its own against ``language``; the words of
    ``brand`` (the client's description) are left out first."""
    brand_words = {w.casefold() for w in _WORD.findall(brand)}
    minimum = MIN_LETTERS_DENSE if language in DENSE else MIN_LETTERS
    verdicts = []
    for ref, text in lines:
        own = _WORD.sub(lambda m: " " if m.group(0).casefold() in brand_words else m.group(0), text)
        if sum(ch.isalpha() for ch in own) < minimum:
            verdicts.append(LineVerdict(ref, judged=False))
            continue
        ranked = _identifier().rank(own)
        found, probability = ranked[0]
        ours = dict(ranked).get(language, 0.0)
        codes = [code for code, _p in ranked[:TOP]]
        fits = found == language or (language in codes and ours >= MIN_PROBABILITY)
        verdicts.append(LineVerdict(ref, True, found, float(probability), fits))
    return verdicts
