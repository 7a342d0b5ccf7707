"""Which language a script is written in, by py3langid (langid.py's model, offline), told
to choose among the languages the project knows: an ad's script is in one of them, and a
free choice among 97 reads a short English line as Nigerian Pidgin."""

from __future__ import annotations

from functools import cache

from py3langid.langid import MODEL_FILE, LanguageIdentifier

from adstudio.languages import LANGUAGES


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
