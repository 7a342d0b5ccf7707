"""The one language normaliser: every spelling a person, a provider or a model uses for a
language ("Thai", "th_TH", "pt-BR", "mandarin") becomes an ISO 639-1 code plus a locale.

The languages are a data table; adding one is adding a row, never a branch.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache

# (ISO 639-1 code, English name, aliases: other codes, native names, common names).
# Aliases are matched after lower-casing and stripping accents ("Português" -> "portugues").
LANGUAGES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("af", "Afrikaans", ("afr",)),
    ("am", "Amharic", ("amh",)),
    ("ar", "Arabic", ("ara", "arabe", "arabisch")),
    ("az", "Azerbaijani", ("aze", "azeri", "azerbaijani turkish")),
    ("bg", "Bulgarian", ("bul", "balgarski")),
    ("bn", "Bengali", ("ben", "bangla")),
    ("ca", "Catalan", ("cat", "catala", "valencian")),
    ("cs", "Czech", ("ces", "cze", "cestina", "czech language")),
    ("cy", "Welsh", ("cym", "wel", "cymraeg")),
    ("da", "Danish", ("dan", "dansk")),
    ("de", "German", ("deu", "ger", "deutsch", "allemand")),
    ("el", "Greek", ("ell", "gre", "ellinika", "modern greek")),
    ("en", "English", ("eng", "anglais", "ingles", "englisch")),
    ("es", "Spanish", ("spa", "espanol", "castellano", "espagnol", "spanisch")),
    ("et", "Estonian", ("est", "eesti")),
    ("eu", "Basque", ("eus", "baq", "euskara")),
    ("fa", "Persian", ("fas", "per", "farsi", "dari")),
    ("fi", "Finnish", ("fin", "suomi")),
    ("fr", "French", ("fra", "fre", "francais", "franzosisch")),
    ("ga", "Irish", ("gle", "gaeilge", "irish gaelic")),
    ("gl", "Galician", ("glg", "galego")),
    ("gu", "Gujarati", ("guj",)),
    ("ha", "Hausa", ("hau",)),
    ("he", "Hebrew", ("heb", "iw", "ivrit")),
    ("hi", "Hindi", ("hin",)),
    ("hr", "Croatian", ("hrv", "hrvatski")),
    ("hu", "Hungarian", ("hun", "magyar")),
    ("hy", "Armenian", ("hye", "arm")),
    ("id", "Indonesian", ("ind", "bahasa indonesia", "bahasa")),
    ("is", "Icelandic", ("isl", "ice", "islenska")),
    ("it", "Italian", ("ita", "italiano", "italien")),
    ("ja", "Japanese", ("jpn", "jp", "nihongo", "japanisch")),
    ("ka", "Georgian", ("kat", "geo")),
    ("kk", "Kazakh", ("kaz",)),
    ("km", "Khmer", ("khm", "cambodian")),
    ("kn", "Kannada", ("kan",)),
    ("ko", "Korean", ("kor", "hangugeo", "kr")),
    ("lo", "Lao", ("lao", "laotian")),
    ("lt", "Lithuanian", ("lit", "lietuviu")),
    ("lv", "Latvian", ("lav", "latviesu")),
    ("mk", "Macedonian", ("mkd", "mac")),
    ("ml", "Malayalam", ("mal",)),
    ("mr", "Marathi", ("mar",)),
    ("ms", "Malay", ("msa", "may", "bahasa melayu", "melayu")),
    ("my", "Burmese", ("mya", "bur", "myanmar")),
    ("ne", "Nepali", ("nep",)),
    ("nl", "Dutch", ("nld", "dut", "nederlands", "flemish", "vlaams")),
    ("no", "Norwegian", ("nor", "nb", "nob", "nn", "nno", "norsk", "bokmal", "nynorsk")),
    ("pa", "Punjabi", ("pan", "panjabi")),
    ("pl", "Polish", ("pol", "polski")),
    ("pt", "Portuguese", ("por", "portugues", "portugais")),
    ("ro", "Romanian", ("ron", "rum", "romana", "moldovan")),
    ("ru", "Russian", ("rus", "russkiy")),
    ("si", "Sinhala", ("sin", "sinhalese")),
    ("sk", "Slovak", ("slk", "slo", "slovencina")),
    ("sl", "Slovenian", ("slv", "slovene", "slovenscina")),
    ("sq", "Albanian", ("sqi", "alb", "shqip")),
    ("sr", "Serbian", ("srp", "srpski")),
    ("sv", "Swedish", ("swe", "svenska")),
    ("sw", "Swahili", ("swa", "kiswahili")),
    ("ta", "Tamil", ("tam",)),
    ("te", "Telugu", ("tel",)),
    ("th", "Thai", ("tha", "phasa thai")),
    ("tl", "Filipino", ("fil", "tgl", "tagalog", "pilipino")),
    ("tr", "Turkish", ("tur", "turkce")),
    ("uk", "Ukrainian", ("ukr", "ukrainska")),
    ("ur", "Urdu", ("urd",)),
    ("uz", "Uzbek", ("uzb",)),
    ("vi", "Vietnamese", ("vie", "tieng viet", "viet")),
    ("yo", "Yoruba", ("yor",)),
    ("zh", "Chinese", ("zho", "chi", "cmn", "mandarin", "putonghua", "mandarin chinese")),
    ("zu", "Zulu", ("zul", "isizulu")),
)

# Names that carry a regional variant as well as the language.
LOCALE_ALIASES: dict[str, tuple[str, str]] = {
    "american english": ("en", "en-US"),
    "british english": ("en", "en-GB"),
    "australian english": ("en", "en-AU"),
    "canadian english": ("en", "en-CA"),
    "indian english": ("en", "en-IN"),
    "brazilian portuguese": ("pt", "pt-BR"),
    "european portuguese": ("pt", "pt-PT"),
    "castilian": ("es", "es-ES"),
    "castilian spanish": ("es", "es-ES"),
    "european spanish": ("es", "es-ES"),
    "mexican spanish": ("es", "es-MX"),
    "latin american spanish": ("es", "es-419"),
    "canadian french": ("fr", "fr-CA"),
    "swiss german": ("de", "de-CH"),
    "austrian german": ("de", "de-AT"),
    "cantonese": ("zh", "zh-HK"),  # no ISO 639-1 code of its own; TTS vendors file it as zh-HK
    "yue": ("zh", "zh-HK"),
    "taiwanese mandarin": ("zh", "zh-TW"),
}

# Region subtags people write that are not ISO 3166 ("en-UK").
# A language as the API's schema declares it: any spelling ``normalise_language`` reads,
# which no pattern describes; the suite generates such values for the format.
LANGUAGE_SCHEMA = {"type": "string", "format": "language", "minLength": 1, "maxLength": 64}

_REGION_ALIASES = {"UK": "GB"}

_TAG = re.compile(
    r"^(?P<lang>[a-z]{2,3})(?:-(?P<script>[a-z]{4}))?(?:-(?P<region>[a-z]{2}|\d{3}))?$"
)
# "English (US)", "portuguese (br)": a name followed by a region code in brackets.
_NAME_REGION = re.compile(r"^(?P<name>[^()]+?) ?\((?P<region>[a-z]{2}|\d{3})\)$")


class UnknownLanguage(ValueError):
    """The value names no language in the table; ``suggestions`` are close codes."""

    def __init__(self, value: str, suggestions: list[str] | None = None) -> None:
        self.value = value
        self.suggestions = suggestions or []
        shown = value if len(value) <= 60 else f"{value[:57]}..."
        if not value.strip():
            message = (
                "No language given: pass an ISO 639-1 code such as 'th' or a name such as 'Thai'."
            )
        elif self.suggestions:
            close = ", ".join(f"{code} ({language_name(code)})" for code in self.suggestions)
            message = f"Unknown language {shown!r}. Did you mean: {close}?"
        else:
            message = (
                f"Unknown language {shown!r}: pass an ISO 639-1 code such as 'th' "
                "or an English name such as 'Thai'."
            )
        super().__init__(message)


@dataclass(frozen=True)
class Language:
    """A normalised language: ``code`` is ISO 639-1; ``locale`` the regional variant or ''."""

    code: str
    locale: str = ""

    @property
    def name(self) -> str:
        return language_name(self.code)


@cache
def _aliases() -> dict[str, str]:
    table: dict[str, str] = {}
    for code, name, aliases in LANGUAGES:
        for key in (code, name, *aliases):
            table[_fold(key)] = code
    return table


@cache
def _names() -> dict[str, str]:
    return {code: name for code, name, _ in LANGUAGES}


def _fold(value: str) -> str:
    """Lower-case, accents stripped, one space between words, '-' between tag parts."""
    decomposed = unicodedata.normalize("NFKD", value)
    ascii_only = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    folded = " ".join(ascii_only.casefold().split())
    return folded.replace("_", "-")


def language_name(code: str) -> str:
    """The English name of a canonical code, or the code itself when it is not in the table."""
    return _names().get(code, code)


@lru_cache(maxsize=4096)  # bounded: values come from files and models
def normalise_language(value: str) -> Language:
    """Turn any spelling of a language into ``Language(code, locale)``.

    Accepts codes (``th``, ``tha``), tags (``th-TH``, ``th_TH``, ``zh-Hant-TW``), English,
    native and common names (``Thai``, ``Português``, ``mandarin``). Raises
    ``UnknownLanguage`` with close matches otherwise.
    """
    key = _fold(value)
    if key in LOCALE_ALIASES:
        code, locale = LOCALE_ALIASES[key]
        return Language(code, locale)
    aliases = _aliases()
    if key in aliases:
        return Language(aliases[key])
    match = _TAG.match(key)
    if match and match["lang"] in aliases and (match["script"] or match["region"]):
        return _with_locale(aliases[match["lang"]], match["script"], match["region"])
    match = _NAME_REGION.match(key)
    if match and match["name"] in aliases:
        return _with_locale(aliases[match["name"]], None, match["region"])
    raise UnknownLanguage(value, _close_matches(key))


def _with_locale(code: str, script: str | None, region: str | None) -> Language:
    parts = [code]
    if script:
        parts.append(script.title())
    if region:
        region = region.upper()
        parts.append(_REGION_ALIASES.get(region, region))
    return Language(code, "-".join(parts))


def _close_matches(key: str) -> list[str]:
    if not key or len(key) > 60:  # no language name is that long; difflib would be slow
        return []
    aliases = _aliases()
    candidates = difflib.get_close_matches(key, list(aliases), n=8, cutoff=0.6)
    codes: list[str] = []
    for candidate in candidates:
        code = aliases[candidate]
        if code not in codes:
            codes.append(code)
    return codes[:3]
