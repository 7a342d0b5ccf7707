"""search_voices and the selectors around it: filters, ranking, clamping, approved-only."""

from __future__ import annotations

import pytest

from adstudio.languages import UnknownLanguage
from voices.models import Voice
from voices.selectors import (
    _COMPACT_FIELDS,
    InvalidSearch,
    _accent_search_sql,
    _search_sql,
    _style_search_sql,
    approved_voices_by_id,
    catalogue_languages,
    search_voices,
    voice_facets,
    voice_query,
    voice_queryset,
)

pytestmark = pytest.mark.django_db


def names(results: list[dict[str, str]]) -> list[str]:
    return [r["name"] for r in results]


def test_only_approved_active_voices_of_the_language(make_voice):
    make_voice(name="Approved", language="th")
    make_voice(name="Unapproved", language="th", approved=False)
    make_voice(name="Inactive", language="th", active=False)
    make_voice(name="English", language="en")

    assert names(search_voices("th")) == ["Approved"]


@pytest.mark.parametrize("language", ["th", "Thai", "THAI", "tha"])
def test_language_is_normalised(make_voice, language):
    make_voice(name="Somchai", language="th")
    assert names(search_voices(language)) == ["Somchai"]


def test_language_with_a_region_narrows_to_that_locale(make_voice):
    make_voice(name="Brazil", language="pt", locale="pt-BR")
    make_voice(name="Portugal", language="pt", locale="pt-PT")

    assert names(search_voices("pt-BR")) == ["Brazil"]
    assert names(search_voices("Portuguese")) == ["Brazil", "Portugal"]


def test_unknown_language_raises_with_close_matches():
    with pytest.raises(UnknownLanguage, match=r"Did you mean: th \(Thai\)"):
        search_voices("thia")


@pytest.mark.parametrize("language", ["", "  ", None])
def test_language_is_required(language):
    with pytest.raises(InvalidSearch) as caught:
        search_voices(language)
    assert caught.value.field == "language"


def test_gender_filter(make_voice):
    make_voice(name="Her", gender="female")
    make_voice(name="Him", gender="male")
    make_voice(name="Them", gender="neutral")

    assert names(search_voices("en", gender="male")) == ["Him"]
    assert names(search_voices("en", gender="Female")) == ["Her"]
    assert names(search_voices("en", gender="neutral")) == ["Them"]
    assert names(search_voices("en", gender="")) == ["Her", "Him", "Them"]


def test_unknown_gender_is_refused_naming_the_field():
    with pytest.raises(InvalidSearch, match="Unknown gender 'robot': use one of male") as caught:
        search_voices("en", gender="robot")
    assert caught.value.field == "gender"


def test_accent_matches_accent_or_locale_case_insensitively(make_voice):
    make_voice(name="Brit", accent="British", locale="en-GB")
    make_voice(name="Scot", accent="scottish", locale="en-GB")
    make_voice(name="Yank", accent="american", locale="en-US")
    make_voice(name="Southern", accent="Southern American", locale="en-US")

    assert names(search_voices("en", accent="british")) == ["Brit"]
    assert names(search_voices("en", accent="BRITISH")) == ["Brit"]
    assert names(search_voices("en", accent="en-GB")) == ["Brit", "Scot"]
    assert names(search_voices("en", accent="en_gb")) == ["Brit", "Scot"]
    assert names(search_voices("en", accent="GB")) == ["Brit", "Scot"]
    assert names(search_voices("en", accent="southern_american")) == ["Southern"]
    assert names(search_voices("en", accent="brit")) == []  # whole values, not substrings
    assert names(search_voices("en", accent="brit\x00ish")) == ["Brit"]  # NUL: dropped


def test_style_matches_style_use_case_and_description_words(make_voice):
    make_voice(name="A Style", style="Warm")
    make_voice(name="B Use", use_case="warm")
    make_voice(name="C Described", description="A warm, friendly read.")
    make_voice(name="D Warmth", description="Full of warmth.")  # a different word
    make_voice(name="E Other", style="energetic", description="Bright.")

    assert names(search_voices("en", style="WARM")) == ["A Style", "B Use", "C Described"]


def test_exact_style_or_use_case_ranks_before_partial_matches(make_voice):
    make_voice(name="Aaron", description="Calm and warm.")
    make_voice(name="Bella", style="warm and calm")
    make_voice(name="Chris", style="warm")
    make_voice(name="Dora", use_case="Warm")
    make_voice(name="Ed", style="calm", description="warm")

    # Exact first (Chris, Dora), then the partial matches; each group by name.
    assert names(search_voices("en", style="warm")) == ["Chris", "Dora", "Aaron", "Bella", "Ed"]


def test_every_word_of_a_multi_word_style_must_match(make_voice):
    make_voice(name="Described", description="Upbeat clips for social media.")
    make_voice(name="Exact", use_case="social media")
    make_voice(name="One", style="social")

    assert names(search_voices("en", style="upbeat social")) == ["Described"]
    assert names(search_voices("en", style="social-media")) == ["Exact", "Described"]
    assert names(search_voices("en", style="Social  Media")) == ["Exact", "Described"]


def test_style_without_words_is_ignored(make_voice):
    make_voice(name="Any")
    assert names(search_voices("en", style=" !! ")) == ["Any"]


def test_filters_combine(make_voice):
    make_voice(name="Match", gender="female", accent="british", style="warm")
    make_voice(name="Wrong gender", gender="male", accent="british", style="warm")
    make_voice(name="Wrong accent", gender="female", accent="american", style="warm")
    make_voice(name="Wrong style", gender="female", accent="british", style="calm")

    results = search_voices("English", gender="female", accent="British", style="warm")

    assert names(results) == ["Match"]


def test_ties_are_broken_by_name_then_id_so_results_are_stable(make_voice):
    first = make_voice(name="Same", provider_voice_id="x")
    second = make_voice(name="Same", provider_voice_id="y")
    make_voice(name="Alpha")

    results = search_voices("en")

    assert [r["id"] for r in results] == [
        str(Voice.objects.get(name="Alpha").pk),
        str(first.pk),
        str(second.pk),
    ]
    assert all(search_voices("en") == results for _ in range(3))


@pytest.mark.parametrize(
    ("count", "expected"),
    [(None, 10), (0, 1), (-5, 1), (1, 1), (3, 3), (50, 50), (51, 50), (10_000, 50), ("7", 7)],
)
def test_count_is_clamped(make_voice, count, expected):
    for number in range(60):
        make_voice(name=f"V{number:02d}")
    results = search_voices("en") if count is None else search_voices("en", count=count)
    assert len(results) == expected


def test_results_are_compact_records(make_voice):
    voice = make_voice(
        name="Somchai",
        language="th",
        locale="th-TH",
        accent="central",
        gender="male",
        age="young",
        style="warm",
        use_case="ads",
        description="Long text the model does not need in a list.",
        provider="elevenlabs",
    )
    bare = make_voice(name="Bare", language="th", locale="th-TH", style="", provider="acme")
    styled_by_use = make_voice(name="Use", language="th", locale="th-TH", style="", use_case="news")

    second, first, third = search_voices("th")  # by name: Bare, Somchai, Use

    # The design's fields and the age (a cast asked to sound younger or older); not the
    # provider nor a locale every result shares.
    assert first == {
        "id": str(voice.pk),
        "name": "Somchai",
        "language": "th",
        "accent": "central",
        "gender": "male",
        "age": "young",
        "style": "warm",
    }
    # Empty fields are left out: fewer tokens in the tool result.
    assert second == {"id": str(bare.pk), "name": "Bare", "language": "th", "gender": "female"}
    # A voice with no style is described by its use case, as the design does.
    assert third["style"] == "news" and third["id"] == str(styled_by_use.pk)


def test_locale_is_given_where_the_results_mix_locales(make_voice):
    make_voice(name="Carioca", language="pt", locale="pt-BR")
    make_voice(name="Lisboa", language="pt", locale="pt-PT")

    results = search_voices("Portuguese")

    assert [(v["name"], v["locale"]) for v in results] == [
        ("Carioca", "pt-BR"),
        ("Lisboa", "pt-PT"),
    ]
    assert all("locale" not in v for v in search_voices("pt-BR"))


def test_one_query_per_search(make_voice, django_assert_num_queries):
    make_voice(style="warm", accent="british")
    with django_assert_num_queries(1):
        search_voices("English", gender="female", accent="british", style="warm", count=5)


def test_style_words_use_the_full_text_index(make_voice):
    """The query's document must be the indexed expression (migration 0002), or every
    style search scans the language's rows."""
    from django.db import connection

    from voices.selectors import _WordsMatch

    make_voice(style="warm")
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    plan = Voice.objects.filter(_WordsMatch("warm")).explain()

    assert "Bitmap Index Scan on voice_search_words" in plan


def _generated_catalogue(count: int, seed: int) -> None:
    """``count`` voices of the benchmark generator (every language), a tenth unapproved,
    and voices whose descriptions name styles they do not have (partial matches)."""
    from benchmarks.catalogue_generator import generate

    Voice.objects.bulk_create(
        Voice(**row, approved=number % 10 != 3) for number, row in enumerate(generate(count, seed))
    )
    Voice.objects.bulk_create(
        Voice(
            provider="partial",
            provider_voice_id=f"p{number}",
            name=f"{'ABCDEFGHIJKLMNOPQRSTUVWXYZ'[number % 26]}{number} Partial",
            language=("en", "th", "pt")[number % 3],
            locale=("en-GB", "th-TH", "pt-BR")[number % 3],
            gender=("male", "female")[number % 2],
            accent="british" if number % 3 == 0 else "",
            style="deep",
            use_case="podcast",
            description="Warm, conversational; made for social media and e-learning.",
            approved=True,
        )
        for number in range(90)
    )


def _ids(results: list[dict[str, str]]) -> list[str]:
    return [r["id"] for r in results]


def test_style_search_gives_what_the_ranked_queryset_gives():
    """The style search reads the voices of equal style or use case from their indexes and
    the other word matches only when those run short; the API pages ``voice_queryset``.
    Both must give the same voices in the same order, whichever branch supplies them."""
    _generated_catalogue(900, seed=5)
    styles = [
        "warm",  # a style: many exact voices in English, few in Thai
        "conversational",  # a style and a use case: the same voice can be both
        "social media",  # a use case of two words
        "e-learning",  # its words are "e learning": no voice's use case equals that
        "warm read",  # in descriptions only: every match is a partial one
        "Narration",
        "gentle",  # a description word that is no style
        "yodelling",  # nothing
    ]
    searches = [
        {"language": "en"},
        {"language": "en", "gender": "male"},
        {"language": "en-GB", "gender": "female"},
        {"language": "en", "accent": "british"},
        {"language": "th"},
        {"language": "pt", "gender": "female", "accent": "BR"},
    ]
    compared = 0
    for filters in searches:
        for style in styles:
            query = voice_query(**filters, style=style)
            for count in (1, 3, 10, 50):
                expected = list(voice_queryset(query).values_list("id", flat=True)[:count])
                found = _ids(search_voices(**filters, style=style, count=count))
                assert found == [str(pk) for pk in expected], (filters, style, count)
                compared += bool(expected)
    assert compared > 100  # most searches found voices: the comparison means something


def test_style_search_reads_other_matches_only_when_exact_ones_run_short(make_voice):
    from django.db import connection

    for number in range(12):
        make_voice(
            name=f"Exact {number:02d}",
            style="warm" if number % 2 else "calm",
            use_case="warm" if number % 2 == 0 else "",
        )
    make_voice(name="Aaron", description="A warm read.")

    def plan(count: int) -> str:
        sql, params = _style_search_sql(voice_query(language="en", style="warm"), count)
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF) {sql}", params)
            return "\n".join(row[0] for row in cursor.fetchall())

    # 12 exact matches fill 10 places: the word-match branch is never started.
    assert "One-Time Filter" in plan(10)
    assert "never executed" in plan(10)
    assert names(search_voices("en", style="warm", count=10))[-1] == "Exact 09"
    # 12 cannot fill 13: Aaron, a partial match, comes after every exact one.
    assert "never executed" not in plan(13)
    assert names(search_voices("en", style="warm", count=13))[-1] == "Aaron"


def test_a_hyphenated_style_ranks_the_voices_labelled_with_it_first(make_voice):
    make_voice(name="Aaron", description="Clear diction for e learning modules.")
    make_voice(name="Zed", use_case="E-Learning")

    assert names(search_voices("en", style="e-learning")) == ["Zed", "Aaron"]
    assert names(search_voices("en", style="  E-learning ")) == ["Zed", "Aaron"]
    assert names(search_voices("en", style="e learning")) == ["Aaron", "Zed"]  # only words


def test_a_style_no_voice_has_reads_the_words_index_not_every_voice(make_voice):
    """A word-match walk in name order until ten match reads the whole language when none
    does; the other matches are found through ``voice_search_words`` instead."""
    from django.db import connection

    Voice.objects.bulk_create(
        Voice(
            provider="test",
            provider_voice_id=f"v{number}",
            name=f"Voice {number:04d}",
            language="en",
            gender="female",
            style="calm",
            description="A calm, clear read.",
            approved=True,
        )
        for number in range(3000)
    )
    sql, params = _style_search_sql(voice_query(language="en", style="yodelling"), 10)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE voices_voice")
        cursor.execute(f"EXPLAIN (ANALYZE, COSTS OFF) {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "Bitmap Index Scan on voice_search_words" in plan
    assert "Rows Removed by Filter: 3000" not in plan
    assert search_voices("en", style="yodelling") == []


def test_accent_search_gives_what_the_ordered_queryset_gives():
    """The accent search's union of first entries per match and gender is the same list
    as ordering every matching voice by name (the ORM's query, as SQLite runs it)."""
    accents = [("central", "th-TH"), ("isan", "th-TH"), ("", "th-TH"), ("southern", "")]
    Voice.objects.bulk_create(
        Voice(
            provider="test",
            provider_voice_id=f"v{number}",
            name=f"{'ZYXWVUTSRQ'[number % 10]} {number % 7}",  # ties broken by id
            language="th",
            gender=("male", "female", "neutral")[number % 3],
            accent=accents[number % 4][0],
            locale=accents[number % 4][1],
            approved=number % 11 != 0,
            active=number % 13 != 0,
        )
        for number in range(400)
    )
    for accent in ("central", "CENTRAL", "th-TH", "th_th", "TH", "southern", "lanna"):
        for gender in (None, "male", "female", "neutral"):
            for count in (1, 10, 50):
                query = voice_query(language="th", gender=gender, accent=accent)
                expected = [v["id"] for v in voice_queryset(query).values("id")[:count]]
                found = [
                    int(v["id"]) for v in search_voices("th", gender, accent=accent, count=count)
                ]
                assert found == expected, (accent, gender, count)


def test_accent_search_reads_the_accent_and_locale_indexes():
    from django.db import connection

    Voice.objects.bulk_create(
        Voice(
            provider="test",
            provider_voice_id=f"v{number}",
            name=f"Voice {number:04d}",
            language="fr",
            gender=("male", "female")[number % 2],
            accent=("parisian", "quebecois")[number % 2],
            locale=("fr-FR", "fr-CA")[number % 2],
            approved=True,
        )
        for number in range(2000)
    )
    sql, params = _accent_search_sql(voice_query(language="fr", accent="fr-CA"), 10)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE voices_voice")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "Index Scan using voice_search_accent" in plan
    assert "Index Scan using voice_search_locale" in plan


def test_style_search_uses_the_style_and_use_case_indexes():
    """Their expressions (language, UPPER(style|use_case), name, id) must be what the query
    compares and orders by, or "first 10" reads every match to sort them (migration 0003)."""
    from django.db import connection

    Voice.objects.bulk_create(
        Voice(
            provider="test",
            provider_voice_id=f"v{number}",
            name=f"Voice {number:03d}",
            language="en",
            gender="female",
            style="warm" if number % 50 == 0 else "calm",
            use_case="warm" if number % 50 == 1 else "news",
            approved=True,
        )
        for number in range(1000)
    )
    sql, params = _style_search_sql(voice_query(language="en", style="warm"), 10)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE voices_voice")
        cursor.execute(f"EXPLAIN {sql}", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())

    assert "Index Scan using voice_search_style" in plan
    assert "Index Scan using voice_search_use_case" in plan


# --- facets and languages ----------------------------------------------------------------


def test_facets_count_what_exists_for_the_language(make_voice):
    make_voice(language="th", gender="female", accent="Central", locale="th-TH", style="warm")
    make_voice(language="th", gender="female", accent="central", locale="th-TH", use_case="ads")
    make_voice(language="th", gender="male", accent="isan", style="warm", use_case="warm")
    make_voice(language="th", gender="male", approved=False, accent="hidden", style="secret")
    make_voice(language="en", gender="neutral", accent="british", style="calm")

    facets = voice_facets("Thai")

    assert facets == {
        "genders": {"female": 2, "male": 1},
        "accents": {"central": 2, "isan": 1},
        "locales": {"th-TH": 2},
        "styles": {"warm": 2, "ads": 1},
    }


def test_facets_follow_catalogue_changes(make_voice, django_assert_max_num_queries):
    voice = make_voice(language="th", gender="female")
    assert voice_facets("th")["genders"] == {"female": 1}

    with django_assert_max_num_queries(1):  # cached: only the catalogue version is read
        assert voice_facets("th")["genders"] == {"female": 1}

    make_voice(language="th", gender="male")
    assert voice_facets("th")["genders"] == {"female": 1, "male": 1}

    voice.approved = False
    voice.save()
    assert voice_facets("th")["genders"] == {"male": 1}


def test_facets_of_a_language_without_voices_are_empty(make_voice):
    make_voice(language="en")
    assert voice_facets("sw") == {"genders": {}, "accents": {}, "locales": {}, "styles": {}}


def test_catalogue_languages_counts_searchable_voices(make_voice):
    make_voice(language="th")
    make_voice(language="en")
    make_voice(language="en")
    make_voice(language="de", approved=False)
    make_voice(language="fr", active=False)

    assert list(catalogue_languages().items()) == [("en", 2), ("th", 1)]


# --- approved_voices_by_id -----------------------------------------------------------------


def test_approved_voices_by_id(make_voice, django_assert_num_queries):
    approved = make_voice()
    unapproved = make_voice(approved=False)
    inactive = make_voice(active=False)
    ids = [
        str(approved.pk),
        str(unapproved.pk),
        str(inactive.pk),
        "not-a-number",
        "12.5",
        "-3",
        "99999999999999999999999",  # past bigint: ignored, not a database error
        "",
    ]

    with django_assert_num_queries(1):
        found = approved_voices_by_id(ids)

    assert found == {str(approved.pk): approved}


def test_approved_voices_by_id_keys_by_the_id_as_given(make_voice, django_assert_num_queries):
    voice = make_voice()
    with django_assert_num_queries(0):
        assert approved_voices_by_id(["abc", "x1"]) == {}
    assert approved_voices_by_id([f" {voice.pk}", str(voice.pk)]) == {
        f" {voice.pk}": voice,
        str(voice.pk): voice,
    }


@pytest.mark.parametrize(
    "asked",
    [
        {"language": "pt"},
        {"language": "Portuguese", "gender": "male"},
        {"language": "pt-br"},
        {"language": "PT-BR", "gender": "female"},
    ],
)
def test_a_search_by_language_alone_finds_what_the_queryset_finds(make_voice, asked):
    for n, (locale, gender) in enumerate(
        [("pt-BR", "male"), ("pt-BR", "female"), ("pt-PT", "female"), ("pt-PT", "male")] * 6
    ):
        make_voice(name=f"{'ZYX'[n % 3]} {n}", language="pt", locale=locale, gender=gender)
    make_voice(name="A unapproved", language="pt", locale="pt-BR", approved=False)
    make_voice(name="A English", language="en", locale="en-GB")
    query = voice_query(**asked)
    expected = [
        row["id"] for row in voice_queryset(query).values("id")[:5]
    ]  # the ORM's statement, as it was built before

    assert [int(v["id"]) for v in search_voices(**asked, count=5)] == expected
    assert len(expected) == 5


def test_a_search_by_language_alone_is_compiled_once_per_shape(make_voice, monkeypatch):
    make_voice(name="Somchai", language="th", gender="male")
    make_voice(name="Malee", language="th", gender="female")
    make_voice(name="Ama", language="en", gender="female")
    assert names(search_voices("th", gender="male")) == ["Somchai"]

    def compiled(query):
        raise AssertionError(f"a queryset was built for {query}")

    monkeypatch.setattr("voices.selectors.voice_queryset", compiled)
    # the same shape, other values: the statement compiled once, its parameters new
    assert names(search_voices("English", gender="female")) == ["Ama"]
    assert names(search_voices("Thai", gender="female")) == ["Malee"]


@pytest.mark.parametrize("language", ["en", "en-GB", "pt-BR", "Thai"])
@pytest.mark.parametrize("gender", [None, "female"])
@pytest.mark.parametrize(
    ("accent", "style"),
    [
        (None, None),
        ("british", None),
        ("gb", None),  # a region code: the language's locale too
        ("en_gb", None),
        ("Scottish English", None),
        ("001", None),
        (None, "warm"),
        (None, "Social-Media"),  # the phrase and its words differ
        (None, "warm news voice"),
        ("british", "e-learning"),
    ],
)
def test_a_statement_compiled_once_is_the_one_built_for_the_search(language, gender, accent, style):
    """Each shape's statement is compiled once with stand-ins for its values: with the
    search's values put back, it is the statement built for that search, word for word."""
    query = voice_query(language=language, gender=gender, accent=accent, style=style)
    for count in (10, 3):
        if query.style_words:
            built = _style_search_sql(query, count)
        elif query.accent:
            built = _accent_search_sql(query, count)
        else:
            sql, params = (
                voice_queryset(query).values_list(*_COMPACT_FIELDS).query.sql_with_params()
            )
            built = (f"{sql} LIMIT {count}", params)
        assert _search_sql(query, count) == (built[0], list(built[1]))
