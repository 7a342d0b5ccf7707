"""The one language normaliser: every spelling maps to an ISO 639-1 code and a locale."""

from __future__ import annotations

import pytest

from adstudio.languages import LANGUAGES, Language, UnknownLanguage, normalise_language


@pytest.mark.parametrize(
    ("given", "code", "locale"),
    [
        ("thai", "th", ""),
        ("Thai", "th", ""),
        ("th", "th", ""),
        ("TH", "th", ""),
        ("th-TH", "th", "th-TH"),
        ("th_TH", "th", "th-TH"),
        ("  thai  ", "th", ""),
        ("tha", "th", ""),
        ("portuguese", "pt", ""),
        ("Português", "pt", ""),
        ("pt-BR", "pt", "pt-BR"),
        ("pt_br", "pt", "pt-BR"),
        ("pt-PT", "pt", "pt-PT"),
        ("Brazilian Portuguese", "pt", "pt-BR"),
        ("Portuguese (BR)", "pt", "pt-BR"),
        ("chinese", "zh", ""),
        ("zh", "zh", ""),
        ("zh-CN", "zh", "zh-CN"),
        ("mandarin", "zh", ""),
        ("Mandarin Chinese", "zh", ""),
        ("zh-Hant-TW", "zh", "zh-Hant-TW"),
        ("cantonese", "zh", "zh-HK"),
        ("English", "en", ""),
        ("en-us", "en", "en-US"),
        ("en-UK", "en", "en-GB"),
        ("English (US)", "en", "en-US"),
        ("british english", "en", "en-GB"),
        ("es-419", "es", "es-419"),
        ("Español", "es", ""),
        ("castellano", "es", ""),
        ("Mexican Spanish", "es", "es-MX"),
        ("deutsch", "de", ""),
        ("ger", "de", ""),
        ("Français", "fr", ""),
        ("fr-CA", "fr", "fr-CA"),
        ("Bahasa Indonesia", "id", ""),
        ("id-ID", "id", "id-ID"),
        ("Tiếng Việt", "vi", ""),
        ("vi", "vi", ""),
        ("polski", "pl", ""),
        ("Čeština", "cs", ""),
        ("cs-CZ", "cs", "cs-CZ"),
        ("Română", "ro", ""),
        ("ja-JP", "ja", "ja-JP"),
        ("Japanese", "ja", ""),
        ("Korean", "ko", ""),
        ("Hindi", "hi", ""),
        ("farsi", "fa", ""),
        ("iw", "he", ""),
        ("Tagalog", "tl", ""),
        ("fil-PH", "tl", "tl-PH"),
        ("nb-NO", "no", "no-NO"),
    ],
)
def test_normalises(given, code, locale):
    assert normalise_language(given) == Language(code, locale)


@pytest.mark.parametrize(
    ("given", "suggested"),
    [
        ("thia", "th"),
        ("portugese", "pt"),
        ("englsh", "en"),
        ("spanich", "es"),
        ("japanes", "ja"),
    ],
)
def test_unknown_language_lists_close_matches(given, suggested):
    with pytest.raises(UnknownLanguage) as caught:
        normalise_language(given)
    assert isinstance(caught.value, ValueError)
    assert caught.value.suggestions[0] == suggested
    assert str(caught.value).startswith(f"Unknown language {given!r}. Did you mean: {suggested} (")


@pytest.mark.parametrize("given", ["klingon", "xx-YY", "en-123456", "12"])
def test_unknown_language_without_close_match_says_what_to_pass(given):
    with pytest.raises(UnknownLanguage, match="pass an ISO 639-1 code such as 'th'") as caught:
        normalise_language(given)
    assert caught.value.suggestions == []


@pytest.mark.parametrize("given", ["", "   "])
def test_empty_language_is_an_error(given):
    with pytest.raises(UnknownLanguage, match="No language given"):
        normalise_language(given)


def test_table_covers_the_common_languages_once_each():
    codes = [code for code, _, _ in LANGUAGES]
    assert len(codes) >= 40
    assert len(codes) == len(set(codes))
    for code in ("en", "es", "pt", "fr", "de", "it", "zh", "ja", "ko", "th", "vi", "id"):
        assert code in codes
    for code in ("pl", "cs", "ro", "ar", "hi", "tr", "ru", "nl", "sv", "uk", "ms", "tl"):
        assert code in codes


def test_every_name_and_alias_maps_back_to_its_own_code():
    for code, name, aliases in LANGUAGES:
        assert normalise_language(code).code == code
        assert normalise_language(name).code == code
        for alias in aliases:
            assert normalise_language(alias).code == code, alias


def test_language_knows_its_english_name():
    assert normalise_language("th-TH").name == "Thai"


def test_a_huge_value_is_refused_quickly():
    import time

    started = time.perf_counter()
    with pytest.raises(UnknownLanguage) as caught:
        normalise_language("thai" * 50_000)
    assert time.perf_counter() - started < 0.5
    assert len(str(caught.value)) < 200  # the error does not echo the whole value
