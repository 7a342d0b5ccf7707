"""A statement run again on a connection is prepared on the server, not planned again."""

from __future__ import annotations

import pytest
from django.db import connection

from drafts.models import Ad
from voices.selectors import search_voices

pytestmark = pytest.mark.django_db


def prepared(fragment: str) -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s",
            [f"%{fragment}%"],
        )
        return [row[0] for row in cursor.fetchall()]


def test_an_orm_query_run_again_after_five_times_is_prepared_with_its_parameters_bound():
    assert prepared('"drafts_ad"."duration_s" = $1') == []
    for seconds in range(6):
        list(Ad.objects.filter(duration_s=seconds))

    # Bound by the server ($1), so the six queries were one statement, prepared the
    # sixth time.
    [statement] = prepared('"drafts_ad"."duration_s" = $1')
    assert statement.startswith("SELECT")


def test_a_query_run_five_times_or_fewer_is_not_prepared():
    for seconds in range(5):
        list(Ad.objects.filter(duration_s__gt=seconds))

    assert prepared('"drafts_ad"."duration_s" > $1') == []


def test_voice_searches_are_planned_for_their_own_parameters_and_never_prepared():
    # A generic plan, fit for the average accent, would walk a whole language to find
    # none for an accent no voice has: searches are planned each time instead.
    for accent in ["british", "scottish", "irish", "welsh", "jakarta", "texan", "kiwi"]:
        assert search_voices(language="en", accent=accent) == []
    assert prepared('"voices_voice"') == []
    # The connection prepares other statements again afterwards.
    for seconds in range(6):
        list(Ad.objects.filter(duration_s=seconds))
    assert len(prepared('"drafts_ad"."duration_s" = $1')) == 1


def test_a_search_by_language_alone_is_prepared_and_one_by_locale_is_not(make_voice):
    # The first ten of one language (and gender) are the first entries of its index,
    # whatever the language: one plan fits every value. A locale's count is skewed.
    make_voice(name="Somchai", language="th", gender="male")
    for language in ["th", "en", "ja", "fr", "de", "es"]:
        search_voices(language=language, gender="male")
    for locale in ["pt-BR", "pt-PT", "en-GB", "en-AU", "es-MX", "fr-CA"]:
        search_voices(language=locale)

    [statement] = prepared('"voices_voice"')
    assert '"voices_voice"."gender" = $2' in statement and "UPPER" not in statement
    assert search_voices(language="Thai", gender="male")[0]["name"] == "Somchai"
