"""The facet counts that triggers keep (migration 0003): after any write, ``voice_facets``
must say what counting the voices themselves says, without making writers wait."""

from __future__ import annotations

from collections import Counter

import psycopg
import pytest
from django.core.cache import cache
from django.db import connection, transaction
from django.utils import timezone

from tests.support.worker import database_url
from voices.models import SEARCHABLE, Voice
from voices.selectors import voice_facets
from voices.services import voice_import

LANGUAGES = ("en", "th", "pt")


def counted(language: str) -> dict[str, dict[str, int]]:
    """The facets as the voices themselves give them: what the counts must equal."""
    facets: dict[str, Counter[str]] = {
        "genders": Counter(),
        "accents": Counter(),
        "locales": Counter(),
        "styles": Counter(),
    }
    for voice in Voice.objects.filter(SEARCHABLE, language=language):
        facets["genders"][voice.gender] += 1
        if voice.accent:
            facets["accents"][voice.accent.lower()] += 1
        if voice.locale:
            facets["locales"][voice.locale] += 1
        for label in {voice.style.lower(), voice.use_case.lower()} - {""}:
            facets["styles"][label] += 1
    return {key: dict(counter) for key, counter in facets.items()}


def kept(language: str) -> dict[str, dict[str, int]]:
    """The facets from the counts the triggers keep, never from the facet cache (whose keys
    a queryset ``update()`` without ``updated_at`` leaves alone)."""
    cache.clear()
    return voice_facets(language, limit=1000)


def assert_counts_match() -> None:
    for language in LANGUAGES:
        assert kept(language) == counted(language), language


def count_rows(language: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM voices_facet_count WHERE language = %s", [language])
        return cursor.fetchone()[0]


@pytest.mark.django_db
def test_counts_follow_every_kind_of_write(make_voice):
    first = make_voice(language="th", accent="Central", style="Warm", use_case="warm")
    make_voice(language="th", gender="male", accent="central", use_case="ads")
    make_voice(language="th", approved=False, accent="hidden", style="secret")
    assert_counts_match()

    Voice.objects.bulk_create(
        Voice(
            provider="bulk",
            provider_voice_id=f"b{number}",
            name=f"Bulk {number}",
            language=("en", "pt")[number % 2],
            locale=("en-GB", "pt-BR")[number % 2],
            gender=("female", "male", "neutral")[number % 3],
            accent=("british", "carioca", "")[number % 3],
            style=("calm", "Calm", "")[number % 3],
            use_case=("news", "calm", "ads")[number % 3],
            approved=True,
        )
        for number in range(30)
    )
    assert_counts_match()

    # One voice at a time, as the admin saves them: approval, a new accent, a new language.
    hidden = Voice.objects.get(accent="hidden")
    hidden.approved = True
    hidden.save()
    first.accent = "isan"
    first.language = "pt"
    first.save()
    assert_counts_match()

    # Set-based writes, as imports and admin actions make them.
    Voice.objects.filter(language="en", gender="male").update(accent="scottish", style="deep")
    Voice.objects.filter(language="pt", provider="bulk").update(active=False)
    moved = list(Voice.objects.filter(language="en")[:4])
    for voice in moved:
        voice.language, voice.use_case = "th", "trailer"
    Voice.objects.bulk_update(moved, ["language", "use_case"])
    assert_counts_match()

    Voice.objects.filter(language="th", gender="male").delete()
    Voice.objects.filter(provider="bulk", active=False).update(
        active=True, updated_at=timezone.now()
    )
    assert_counts_match()


@pytest.mark.django_db
def test_an_import_and_its_reimport_keep_the_counts(write_json):
    rows = [
        {
            "provider": "acme",
            "provider_voice_id": f"a{number}",
            "name": f"Acme {number}",
            "language": LANGUAGES[number % 3],
            "gender": ("male", "female")[number % 2],
            "accent": ("american", "central", "carioca", "")[number % 4],
            "style": ("warm", "calm", "")[number % 3],
            "use_case": ("news", "Warm")[number % 2],
        }
        for number in range(40)
    ]
    voice_import(path=write_json(rows), approve=True)
    assert_counts_match()

    changed = [{**row, "style": "deep", "accent": "scottish"} for row in rows[:25]]
    voice_import(path=write_json(changed, "changed.json"), deactivate_missing=True)
    assert Voice.objects.filter(active=False).count() == 15
    assert_counts_match()


@pytest.mark.django_db
def test_a_write_rolled_back_to_a_savepoint_leaves_no_count(make_voice):
    make_voice(language="th", accent="central")

    with pytest.raises(RuntimeError), transaction.atomic():
        make_voice(language="th", accent="isan", gender="male")
        Voice.objects.filter(language="th").update(style="warm")
        raise RuntimeError("undo")

    assert kept("th") == {
        "genders": {"female": 1},
        "accents": {"central": 1},
        "locales": {},
        "styles": {},
    }


@pytest.mark.django_db
def test_truncating_the_voices_empties_the_counts(make_voice):
    make_voice(language="th", style="warm")
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE voices_voice")

    assert kept("th") == {"genders": {}, "accents": {}, "locales": {}, "styles": {}}
    assert count_rows("th") == 0


@pytest.mark.django_db
def test_rebuild_gives_the_counts_the_triggers_kept(make_voice):
    for number in range(6):
        make_voice(language="th", accent=("central", "Isan")[number % 2], use_case="ads")
    before = kept("th")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM voices_facet_count")
        cursor.execute("SELECT voices_facet_count_rebuild()")

    assert kept("th") == before == counted("th")


def _insert_voice(conn: psycopg.Connection, voice_id: str, gender: str) -> None:
    conn.execute(
        "INSERT INTO voices_voice (provider, provider_voice_id, name, language, locale, accent,"
        " gender, age, style, use_case, description, preview_url, approved, active, metadata,"
        " created_at, updated_at) VALUES ('other', %s, %s, 'th', 'th-TH', 'central', %s, '',"
        " 'warm', '', '', '', true, true, '{}', now(), now())",
        [voice_id, f"Other {voice_id}", gender],
    )


@pytest.mark.django_db(transaction=True)
def test_each_transaction_folds_a_language_into_one_row_per_value(make_voice):
    for number in range(5):  # five transactions, each adding one voice
        make_voice(language="th", gender=("male", "female")[number % 2], accent="central")

    # genders male and female, accent central: three values, three rows, not fifteen.
    assert count_rows("th") == 3
    assert kept("th")["genders"] == {"female": 2, "male": 3}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("isolation", ["read committed", "repeatable read"])
def test_writers_of_one_language_never_wait_for_each_other(make_voice, isolation):
    make_voice(language="th", gender="female", accent="central", style="warm")

    with transaction.atomic():
        # This transaction writes Thai voices and keeps the language's fold to itself...
        make_voice(language="th", gender="male", accent="central", style="warm")
        with psycopg.connect(database_url()) as other:
            # ...while another writes one too: it must not wait for the first to finish.
            other.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}")
            other.execute("SET lock_timeout = '2s'")
            _insert_voice(other, "o1", "neutral")
            other.commit()
        assert kept("th")["genders"] == {"female": 1, "male": 1, "neutral": 1}

    assert kept("th") == counted("th")
    assert counted("th")["genders"] == {"female": 1, "male": 1, "neutral": 1}
    # The next transaction to write Thai folds what both left.
    make_voice(language="th", gender="female", accent="central", style="warm")
    assert count_rows("th") == 6  # three genders, one accent, one locale, one style
    assert kept("th") == counted("th")


@pytest.mark.django_db(transaction=True)
def test_an_import_in_many_batches_leaves_one_row_per_value_once_committed(write_json):
    rows = [
        {
            "provider": "acme",
            "provider_voice_id": f"a{number}",
            "name": f"Acme {number}",
            "language": "th",
            "gender": ("male", "female")[number % 2],
            "accent": ("central", "isan")[number % 3 == 0],
        }
        for number in range(60)
    ]
    # Twelve batch statements in one transaction: only the first folds under the trigger.
    voice_import(path=write_json(rows), approve=True, batch_size=5)

    assert count_rows("th") == 4  # male, female, central, isan
    assert kept("th")["genders"] == {"male": 30, "female": 30}
    assert kept("th")["accents"] == {"central": 40, "isan": 20}


@pytest.mark.django_db(transaction=True)
def test_the_fold_leaves_a_language_another_transaction_is_folding(make_voice):
    for number in range(4):  # four transactions, folded by each: one row per value
        make_voice(language="en", gender=("male", "female")[number % 2])
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO voices_facet_count (language, gender, voices) VALUES ('en', 'male', 1)"
        )
    assert count_rows("en") == 3
    with psycopg.connect(database_url(), autocommit=False) as other:
        other.execute(
            "SELECT pg_advisory_xact_lock(hashtext('voices_facet_count'), hashtext('en'))"
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT voices_facet_count_fold()")
            assert cursor.fetchone()[0] == 0  # no wait: left to its folder
        assert count_rows("en") == 3
    with connection.cursor() as cursor:
        cursor.execute("SELECT voices_facet_count_fold()")
        assert cursor.fetchone()[0] == 1
    assert count_rows("en") == 2
    assert kept("en")["genders"] == {"male": 3, "female": 2}
