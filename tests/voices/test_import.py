"""``import_voices``: three formats, idempotent upserts, approvals kept, and bad input
reported by line and field with nothing written."""

from __future__ import annotations

import io
import json
from datetime import datetime

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.voices.conftest import voice_row
from voices import services
from voices.catalogue_rows import _is_http_url, _url_validator
from voices.models import Voice
from voices.services import ImportFailed, voice_import

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("import_voices", *[str(a) for a in args], stdout=out)
    return out.getvalue()


def fail(*args: str) -> str:
    with pytest.raises(CommandError) as caught:
        run(*args)
    return str(caught.value)


THAI = voice_row(
    provider_voice_id="th-1",
    name="Somchai",
    language="Thai",
    locale="th_TH",
    gender="Male",
    accent="Central_Thai",
    age="middle_aged",
    style="warm",
    use_case="advertisement",
    description="Warm, friendly narrator.",
    preview_url="https://cdn.example.com/th-1.mp3",
    metadata={"tier": "pro"},
)
BRAZIL = voice_row(
    provider_voice_id="pt-1", name="Ana", language="pt-BR", gender="female", style="bright"
)


# --- formats ---------------------------------------------------------------------------


def test_json_import_normalises_and_creates_unapproved_voices(write_json):
    path = write_json([THAI, BRAZIL])

    output = run(path)

    assert f"{path} (json): 2 created, 0 updated, 0 unchanged, 0 skipped (invalid)" in output
    thai = Voice.objects.get(provider_voice_id="th-1")
    assert (thai.provider, thai.name, thai.language, thai.locale) == (
        "acme",
        "Somchai",
        "th",
        "th-TH",
    )
    assert (thai.gender, thai.accent, thai.age) == ("male", "Central Thai", "middle aged")
    assert (thai.style, thai.use_case) == ("warm", "advertisement")
    assert thai.preview_url == "https://cdn.example.com/th-1.mp3"
    assert thai.metadata == {"tier": "pro"}
    assert (thai.approved, thai.active) == (False, True)
    brazil = Voice.objects.get(provider_voice_id="pt-1")
    assert (brazil.language, brazil.locale) == ("pt", "pt-BR")


def test_csv_import_with_provider_option(write_text):
    path = write_text(
        "provider_voice_id,name,language,gender,style,metadata\n"
        'c1,Lucía,es-MX,female,upbeat,"{""tier"": ""free""}"\n'
        "\n"
        "c2,Mateo,Spanish,male,,\n"
    )

    output = run(path, "--provider", "Azure")

    assert "(csv): 2 created, 0 updated, 0 unchanged, 0 skipped (invalid)" in output
    lucia = Voice.objects.get(provider_voice_id="c1")
    assert (lucia.provider, lucia.language, lucia.locale) == ("azure", "es", "es-MX")
    assert lucia.metadata == {"tier": "free"}
    assert Voice.objects.get(provider_voice_id="c2").metadata == {}


def test_csv_without_provider_column_or_option_names_the_field(write_text):
    path = write_text("provider_voice_id,name,language,gender\nc1,Lucía,es,female\n")

    message = fail(path)

    assert "line 2 (row 1), field 'provider': required field is missing (or pass --provider)" in (
        message
    )
    assert not Voice.objects.exists()


ELEVENLABS = {
    "voices": [
        {
            "voice_id": "21m00Tcm4TlvDq8ikWAM",
            "name": "Rachel",
            "category": "premade",
            "labels": {
                "accent": "american",
                "gender": "female",
                "age": "young",
                "descriptive": "calm",
                "use_case": "narrative_story",
            },
            "description": "Matter-of-fact, personable woman.",
            "preview_url": "https://storage.example.com/rachel.mp3",
            "verified_languages": [
                {
                    "language": "en",
                    "model_id": "eleven_multilingual_v2",
                    "accent": "american",
                    "locale": "en-US",
                    "preview_url": "https://storage.example.com/rachel-en.mp3",
                },
                {"language": "es", "model_id": "eleven_multilingual_v2", "locale": "es-MX"},
            ],
        },
        {
            "voice_id": "th-voice",
            "name": "Niran",
            "labels": {"gender": "male", "description": "deep"},
            "verified_languages": [{"language": "th", "locale": "th-TH", "accent": "central"}],
        },
    ],
    "has_more": False,
    "total_count": 2,
}


def test_elevenlabs_export_is_detected_and_mapped(write_text):
    path = write_text(json.dumps(ELEVENLABS, indent=2), "voices.json")

    output = run(path)

    assert f"{path} (elevenlabs): 2 created" in output
    rachel = Voice.objects.get(provider_voice_id="21m00Tcm4TlvDq8ikWAM")
    assert (rachel.provider, rachel.name, rachel.gender) == ("elevenlabs", "Rachel", "female")
    assert (rachel.language, rachel.locale, rachel.accent) == ("en", "en-US", "american")
    assert (rachel.style, rachel.use_case, rachel.age) == ("calm", "narrative story", "young")
    assert rachel.description == "Matter-of-fact, personable woman."
    assert rachel.preview_url == "https://storage.example.com/rachel.mp3"
    assert rachel.metadata == ELEVENLABS["voices"][0]  # the raw record, all languages kept
    niran = Voice.objects.get(provider_voice_id="th-voice")
    assert (niran.language, niran.locale, niran.accent, niran.style) == (
        "th",
        "th-TH",
        "central",
        "deep",
    )


def test_elevenlabs_voice_without_language_needs_default_language(write_text):
    export = {"voices": [{"voice_id": "x1", "name": "Adam", "labels": {"gender": "male"}}]}
    path = write_text(json.dumps(export), "voices.json")

    message = fail(path)
    assert (
        "line 1 (voice 1), field 'verified_languages[0].language': required field is missing "
        "(or pass --default-language)"
    ) in message

    run(path, "--default-language", "English")
    assert Voice.objects.get(provider_voice_id="x1").language == "en"


def test_elevenlabs_errors_name_the_elevenlabs_field(write_text):
    export = {"voices": [{"voice_id": "x1", "name": "Adam", "labels": {"gender": "robot"}}]}
    path = write_text(json.dumps(export), "voices.json")

    message = fail(path, "--default-language", "en")

    assert (
        "line 1 (voice 1), field 'labels.gender': unknown gender 'robot'; expected male, female "
        "or neutral"
    ) in message


def test_format_option_overrides_detection_and_explains_a_mismatch(write_text):
    path = write_text(json.dumps(ELEVENLABS), "voices.json")

    message = fail(path, "--format", "json")

    assert "expected a JSON list of voices at line 1" in message
    assert "use --format elevenlabs" in message


def test_sample_fixture_imports_and_can_be_approved():
    output = run("voices/fixtures/sample_catalogue.json", "--approve")

    assert "360 created" in output
    assert Voice.objects.filter(approved=True, active=True).count() == 360
    assert Voice.objects.values("language").distinct().count() >= 15


# --- idempotency, dry run, approvals, deactivation ------------------------------------


def test_second_run_of_the_same_file_changes_nothing(write_json):
    path = write_json([THAI, BRAZIL])
    run(path)
    before = {v.pk: v.updated_at for v in Voice.objects.all()}

    output = run(path)

    assert "0 created, 0 updated, 2 unchanged, 0 skipped (invalid)" in output
    assert {v.pk: v.updated_at for v in Voice.objects.all()} == before


def test_changed_rows_are_updated_in_place(write_json):
    run(write_json([THAI, BRAZIL]))
    thai_pk = Voice.objects.get(provider_voice_id="th-1").pk

    output = run(write_json([{**THAI, "style": "energetic"}, BRAZIL]))

    assert "0 created, 1 updated, 1 unchanged" in output
    thai = Voice.objects.get(provider_voice_id="th-1")
    assert (thai.pk, thai.style) == (thai_pk, "energetic")


def test_small_batches_count_the_same(write_json):
    rows = [voice_row(provider_voice_id=f"b{i}", name=f"Voice {i}") for i in range(7)]
    path = write_json(rows)

    report = voice_import(path=path, batch_size=2)
    again = voice_import(path=path, batch_size=3)

    assert (report.created, report.unchanged) == (7, 0)
    assert (again.created, again.unchanged) == (0, 7)
    assert Voice.objects.count() == 7


def test_dry_run_validates_and_counts_without_writing(write_json):
    run(write_json([THAI]))

    output = run(write_json([{**THAI, "name": "Somchai Jr"}, BRAZIL]), "--dry-run")

    assert output.startswith("Dry run, nothing written: ")
    assert "1 created, 1 updated, 0 unchanged" in output
    assert list(Voice.objects.values_list("name", flat=True)) == ["Somchai"]


def test_dry_run_still_reports_invalid_rows(write_json):
    message = fail(write_json([{**THAI, "gender": "robot"}]), "--dry-run")
    assert "field 'gender': unknown gender 'robot'" in message


def test_approve_marks_new_and_existing_voices_approved(write_json):
    run(write_json([THAI]))
    path = write_json([THAI, BRAZIL])

    output = run(path, "--approve")

    assert "1 created, 1 updated, 0 unchanged" in output
    assert set(Voice.objects.values_list("approved", flat=True)) == {True}


def test_reimport_without_approve_keeps_staff_approval(write_json):
    run(write_json([THAI]))
    Voice.objects.update(approved=True)  # a staff member approved it in the admin

    output = run(write_json([{**THAI, "description": "Refreshed"}, BRAZIL]))

    assert "1 created, 1 updated" in output
    thai = Voice.objects.get(provider_voice_id="th-1")
    assert (thai.approved, thai.description) == (True, "Refreshed")
    assert Voice.objects.get(provider_voice_id="pt-1").approved is False


def test_deactivate_missing_only_touches_that_provider(write_json, make_voice):
    run(write_json([THAI, BRAZIL]))
    other = make_voice(provider="other", provider_voice_id="th-1")

    output = run(write_json([THAI]), "--deactivate-missing")

    assert "0 created, 0 updated, 1 unchanged, 0 skipped (invalid), 1 deactivated" in output
    assert Voice.objects.get(provider="acme", provider_voice_id="pt-1").active is False
    assert Voice.objects.get(provider="acme", provider_voice_id="th-1").active is True
    other.refresh_from_db()
    assert other.active is True


def test_a_voice_back_in_the_file_is_reactivated(write_json):
    run(write_json([THAI, BRAZIL]))
    run(write_json([THAI]), "--deactivate-missing")

    output = run(write_json([THAI, BRAZIL]))

    assert "0 created, 1 updated, 1 unchanged" in output
    assert Voice.objects.get(provider_voice_id="pt-1").active is True


def test_deactivate_missing_dry_run_counts_but_keeps_voices_active(write_json):
    run(write_json([THAI, BRAZIL]))

    output = run(write_json([THAI]), "--deactivate-missing", "--dry-run")

    assert "1 deactivated" in output
    assert Voice.objects.filter(active=True).count() == 2


def test_deactivate_missing_refuses_a_file_without_voices(write_json):
    run(write_json([THAI]))

    message = fail(write_json([]), "--deactivate-missing", "--provider", "acme")

    assert "lists no voices: refusing --deactivate-missing" in message
    assert Voice.objects.get().active is True


def test_skip_invalid_does_not_deactivate_rejected_rows(write_json):
    run(write_json([THAI, BRAZIL]))

    output = run(
        write_json([THAI, {**BRAZIL, "gender": "robot"}]), "--skip-invalid", "--deactivate-missing"
    )

    assert "1 skipped (invalid), 0 deactivated" in output
    assert Voice.objects.get(provider_voice_id="pt-1").active is True


# --- bad input ---------------------------------------------------------------------------


def test_missing_file(tmp_path):
    message = fail(tmp_path / "nope.json")
    assert message == f"Cannot read {tmp_path / 'nope.json'}: No such file or directory."


def test_directory_instead_of_file(tmp_path):
    assert fail(tmp_path) == f"Cannot read {tmp_path}: it is a directory, not a file."


def test_empty_file(write_text):
    path = write_text("", "empty.csv")
    assert fail(path) == f"{path} is empty: it has no voices to import."


def test_not_utf8(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes('[\n{"name": "Jos\xe9"}]'.encode("latin-1"))
    assert fail(path) == f"{path} is not UTF-8 text (byte 0xe9 at line 2): save it as UTF-8."


def test_invalid_json_names_line_and_column(write_text):
    path = write_text(
        '[\n{"provider": "a", "name": "x"},\n{"provider": "b" "name": "y"}\n]\n', "x.json"
    )
    message = fail(path)
    assert message == f"{path} is not valid JSON: Expecting ',' delimiter at line 3 column 18."
    assert not Voice.objects.exists()


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("NaN", "NaN is not a JSON value"),
        ("-Infinity", "-Infinity is not a JSON value"),
        ("1" * 5000, "a number with too many digits"),
        ("1e400", "1e400 is too large a number"),
        ("[" * 100_000 + "]" * 100_000, "values nested too deeply"),
    ],
    ids=["nan", "infinity", "5000 digits", "1e400", "nested 100000 deep"],
)
def test_json_python_reads_but_postgresql_refuses_is_named(write_text, value, says):
    bad = f'{{"provider": "a", "metadata": {{"x": {value}}}}}'
    path = write_text(f"[\n{json.dumps(THAI)},\n{bad}\n]\n", "v.json")

    assert fail(path) == f"{path} is not valid JSON: {says}, after line 2."
    assert not Voice.objects.exists()


def test_nul_characters_are_named_per_row_and_field(write_json, write_text):
    other = {**BRAZIL, "provider_voice_id": "pt-2", "metadata": {"k": "\x00"}}
    path = write_json([THAI, {**BRAZIL, "name": "Ana\x00"}, other])
    csv_path = write_text(
        "provider,provider_voice_id,name,language,gender,metadata\n"
        'acme,c1,Ana,pt,female,"{""x"": NaN}"\n'
    )

    message = fail(path)
    dry_run = fail(path, "--dry-run")

    assert "line 3 (voice 2), field 'name': contains a NUL character" in message
    assert "line 4 (voice 3), field 'metadata': contains a NUL character" in message
    assert "contains a NUL character" in dry_run
    assert "field 'metadata': is not valid JSON (NaN is not a JSON value)" in fail(csv_path)
    assert not Voice.objects.exists()


def test_half_a_surrogate_pair_is_named_per_row_and_field(write_text):
    """JSON may escape half of a UTF-16 surrogate pair alone (\\ud800): Python decodes it
    to a string no database encoding can hold. It is named like a NUL; a whole pair (an
    emoji written as two escapes) is text like any other."""
    emoji = json.dumps({**THAI, "name": "Somchai \U0001f600"})  # ensure_ascii: two escapes
    assert "\\ud83d\\ude00" in emoji
    lone_name = json.dumps({**BRAZIL, "name": "Ana"}).replace('"Ana"', '"Ana \\ud800"')
    lone_key = json.dumps({**BRAZIL, "provider_voice_id": "pt-2", "metadata": {"k": 1}})
    lone_key = lone_key.replace('"k"', '"\\udfff"')
    path = write_text(f"[\n{emoji},\n{lone_name},\n{lone_key}\n]\n", "v.json")
    csv_path = write_text(
        "provider,provider_voice_id,name,language,gender,metadata\n"
        'acme,c1,Ana,pt,female,"{""note"": ""\\ud83d""}"\n'
    )

    message = fail(path)

    assert "line 3 (voice 2), field 'name': contains half of a UTF-16 surrogate" in message
    assert "line 4 (voice 3), field 'metadata': contains half of a UTF-16 surrogate" in message
    assert "voice 1" not in message
    assert "line 2 (row 1), field 'metadata': contains half" in fail(csv_path)
    assert not Voice.objects.exists()
    run(path, "--skip-invalid")
    assert list(Voice.objects.values_list("name", flat=True)) == ["Somchai \U0001f600"]


def test_trailing_garbage_after_json_list(write_json, tmp_path):
    path = write_json([THAI])
    path.write_text(path.read_text() + "]\n")
    assert "is not valid JSON: Extra data after the voices at line 4 column 1." in fail(path)
    assert not Voice.objects.exists()


def test_invalid_csv_names_the_line(write_text):
    path = write_text(
        "provider,provider_voice_id,name,language,gender\n"
        "acme,c1,Ana,pt,female\n"
        'acme,c2,"Jo"ao,pt,male\n'
    )
    assert fail(path) == f"{path} is not valid CSV: ',' expected after '\"' at line 3."
    assert not Voice.objects.exists()


def test_csv_row_with_wrong_number_of_fields(write_text):
    path = write_text(
        "provider,provider_voice_id,name,language,gender\nacme,c1,Ana,pt,female,extra\n"
    )
    assert "line 2 (row 1): has 6 fields but the header has 5" in fail(path)


def test_csv_unknown_column(write_text):
    path = write_text("provider,provider_voice_id,name,language,gender,acent\n")
    message = fail(path)
    assert f"{path}, line 1: unknown column 'acent'; the columns are provider," in message


def test_csv_missing_required_column(write_text):
    path = write_text("provider,provider_voice_id,name,language\nacme,c1,Ana,pt\n")
    assert f"{path}, line 1: missing column 'gender'" in fail(path)


@pytest.mark.parametrize(
    ("row", "expected"),
    [
        (
            {**BRAZIL, "name": ""},
            "line 3 (voice 2), field 'name': required field is missing",
        ),
        (
            {k: v for k, v in BRAZIL.items() if k != "provider_voice_id"},
            "line 3 (voice 2), field 'provider_voice_id': required field is missing",
        ),
        (
            {**BRAZIL, "gender": "robot"},
            "line 3 (voice 2), field 'gender': unknown gender 'robot'; expected male, female or "
            "neutral",
        ),
        (
            {**BRAZIL, "language": "klingon"},
            "line 3 (voice 2), field 'language': Unknown language 'klingon': pass an ISO 639-1 "
            "code such as 'th' or an English name such as 'Thai'.",
        ),
        (
            {**BRAZIL, "language": "portugese"},
            "line 3 (voice 2), field 'language': Unknown language 'portugese'. Did you mean: "
            "pt (Portuguese)?",
        ),
        (
            {**BRAZIL, "locale": "en-GB"},
            "line 3 (voice 2), field 'locale': 'en-GB' is not a variant of language 'pt'",
        ),
        (
            {**BRAZIL, "locale": "pt-PT"},
            "line 3 (voice 2), field 'locale': 'pt-PT' contradicts language 'pt-BR'",
        ),
        (
            {**BRAZIL, "name": 42},
            "line 3 (voice 2), field 'name': expected text, got the number 42",
        ),
        (
            {**BRAZIL, "style": "x" * 65},
            "line 3 (voice 2), field 'style': is 65 characters long; the limit is 64",
        ),
        (
            {**BRAZIL, "preview_url": "ftp://x/y.mp3"},
            "line 3 (voice 2), field 'preview_url': 'ftp://x/y.mp3' is not an http(s) URL",
        ),
        (
            {**BRAZIL, "metadata": [1]},
            "line 3 (voice 2), field 'metadata': expected a JSON object, got a list",
        ),
        (
            {**BRAZIL, "colour": "blue"},
            "line 3 (voice 2), field 'colour': unknown field; the fields are provider,",
        ),
        (
            {**THAI},
            "line 3 (voice 2), field 'provider_voice_id': duplicate of line 2 (voice 1): "
            "'th-1' appears twice in the file",
        ),
        ("just text", "line 3 (voice 2): expected a voice object, got text"),
    ],
)
def test_invalid_row_fails_the_whole_import(write_json, row, expected):
    path = write_json([THAI, row])

    message = fail(path)

    assert expected in message
    assert f"problem(s) in 1 row(s) of {path}; nothing was imported." in message
    assert "pass --skip-invalid to import the valid rows" in message
    assert not Voice.objects.exists()


def test_every_bad_row_is_listed_with_its_number(write_text):
    path = write_text(
        "provider,provider_voice_id,name,language,gender\n"
        "acme,c1,Ana,pt,female\n"
        "acme,c2,,pt,robot\n"
        "acme,c3,Joao,xx,male\n"
    )

    message = fail(path)

    assert message.splitlines()[1:] == [
        "  line 3 (row 2), field 'name': required field is missing",
        "  line 3 (row 2), field 'gender': unknown gender 'robot'; expected male, female or "
        "neutral",
        "  line 4 (row 3), field 'language': Unknown language 'xx': pass an ISO 639-1 code such "
        "as 'th' or an English name such as 'Thai'.",
    ]
    assert message.startswith("3 problem(s) in 2 row(s)")


def test_a_bad_row_after_many_batches_still_writes_nothing(write_json):
    rows = [voice_row(provider_voice_id=f"b{i}", name=f"Voice {i}") for i in range(25)]
    rows.append({**BRAZIL, "gender": "robot"})

    with pytest.raises(ImportFailed):
        voice_import(path=write_json(rows), batch_size=5)

    assert not Voice.objects.exists()


def test_skip_invalid_imports_the_valid_rows_and_lists_the_rest(write_json):
    path = write_json([THAI, {**BRAZIL, "gender": "robot"}, voice_row(provider_voice_id="ok")])

    output = run(path, "--skip-invalid")

    assert "2 created, 0 updated, 0 unchanged, 1 skipped (invalid)" in output
    assert "Rejected 1 row(s):" in output
    assert "  line 3 (voice 2), field 'gender': unknown gender 'robot'" in output
    assert set(Voice.objects.values_list("provider_voice_id", flat=True)) == {"th-1", "ok"}


def test_verbosity_0_prints_only_the_rejected_rows(write_json):
    """Django's convention, and what scripts that import a catalogue ask for."""
    path = write_json([THAI, {**BRAZIL, "gender": "robot"}])

    output = run(path, "--skip-invalid", "--verbosity", "0")

    assert output.splitlines() == [
        "Rejected 1 row(s):",
        "  line 3 (voice 2), field 'gender': unknown gender 'robot'; expected male, female or "
        "neutral",
    ]
    assert run(path, "--skip-invalid", "--verbosity", "0") == output  # a re-import: the same
    assert Voice.objects.count() == 1
    assert run(write_json([THAI]), "--verbosity", "0") == ""


def test_provider_option_conflicting_with_the_row(write_json):
    message = fail(write_json([THAI]), "--provider", "azure")
    assert "line 2 (voice 1), field 'provider': 'acme' differs from --provider 'azure'" in message


def test_bad_batch_size(write_json):
    assert fail(write_json([THAI]), "--batch-size", "0") == "--batch-size must be at least 1."


# --- progress ----------------------------------------------------------------------------


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_shown_on_a_terminal_only(write_json):
    rows = [voice_row(provider_voice_id=f"p{i}", name=f"Voice {i}") for i in range(1500)]
    path = write_json(rows)
    terminal = Terminal()

    call_command("import_voices", str(path), stdout=terminal)
    piped = run(path)

    assert "\r" in terminal.getvalue()
    assert "100.0%  1,500 rows" in terminal.getvalue()
    assert "\r" not in piped
    assert "1500 unchanged" in piped


@pytest.mark.parametrize("file_format", ["json", "csv", "elevenlabs"])
def test_the_three_formats_of_one_catalogue_import_the_same(tmp_path, file_format):
    from benchmarks.catalogue_generator import generate, write

    path = tmp_path / f"catalogue.{file_format}"
    with path.open("w", encoding="utf-8", newline="") as out:
        write(generate(40, 3, "elevenlabs"), out, file_format)

    output = run(path)

    assert f"({file_format}): 40 created, 0 updated, 0 unchanged, 0 skipped" in output
    expected = {v["provider_voice_id"]: v for v in generate(40, 3, "elevenlabs")}
    for voice in Voice.objects.all():
        source = expected[voice.provider_voice_id]
        for name in ("name", "language", "locale", "accent", "gender", "age", "style"):
            assert getattr(voice, name) == source[name], (name, file_format)
        assert voice.use_case == source["use_case"]
        assert voice.description == source["description"]


# --- the set-based path: COPY into a staging table, one upsert per batch ---------------


def row_versions() -> dict[str, tuple[str, datetime]]:
    """Each voice's physical row version and ``updated_at``: ``ctid`` moves whenever
    PostgreSQL rewrites a row, even inside the test's own transaction."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT provider_voice_id, ctid::text, updated_at FROM voices_voice")
        return {vid: (ctid, updated_at) for vid, ctid, updated_at in cursor.fetchall()}


def staging_table_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('pg_temp.voice_import_staging') IS NOT NULL")
        return cursor.fetchone()[0]


def numbered(count: int, **overrides) -> list[dict]:
    return [
        voice_row(provider_voice_id=f"n{i:02d}", name=f"Voice {i}", **overrides)
        for i in range(count)
    ]


@pytest.fixture(params=["copy", "orm"])
def writer(request, monkeypatch) -> str:
    """Runs a test through the PostgreSQL path and through the ORM path other databases
    (SQLite, the embedded default) take, which must count and write the same."""
    if request.param == "orm":
        monkeypatch.setattr(services, "_CopyUpsertWriter", services._OrmWriter)
    return request.param


def test_first_import_into_an_empty_table_creates_every_row(write_json, writer):
    report = voice_import(path=write_json(numbered(25)), approve=True, batch_size=10)

    assert (report.created, report.updated, report.unchanged, report.skipped) == (25, 0, 0, 0)
    assert Voice.objects.filter(approved=True, active=True).count() == 25
    voice = Voice.objects.get(provider_voice_id="n13")
    assert (voice.name, voice.language, voice.gender) == ("Voice 13", "th", "male")
    assert not staging_table_exists()


def test_text_copy_must_escape_arrives_intact(write_json, writer):
    description = "Tab\there, a new line\nthen a backslash \\N and \\. and ✓ 🎙"
    metadata = {"quote": 'say "hi"\tnow', "nested": [{"k": "\\"}], "n": 1.5, "ok": True}
    path = write_json([{**THAI, "description": description, "metadata": metadata}])

    voice_import(path=path)
    again = voice_import(path=path)

    voice = Voice.objects.get()
    assert (voice.description, voice.metadata) == (description, metadata)
    assert again.unchanged == 1


def test_unchanged_reimport_writes_no_row(write_json, writer):
    path = write_json(numbered(25))
    voice_import(path=path, approve=True, batch_size=10)
    before = row_versions()

    report = voice_import(path=path, approve=True, batch_size=7)

    assert (report.created, report.updated, report.unchanged) == (0, 0, 25)
    assert row_versions() == before  # not one row rewritten, updated_at unmoved


def test_only_the_voices_that_differ_are_written(write_json, writer):
    rows = numbered(10)
    voice_import(path=write_json(rows), approve=True, batch_size=4)
    Voice.objects.filter(provider_voice_id="n03").update(active=False)
    Voice.objects.filter(provider_voice_id="n05").update(approved=False)
    before = row_versions()
    changed = Voice.objects.get(provider_voice_id="n07")
    rows[7] = {**rows[7], "description": "Now with a description", "metadata": {"v": 2}}

    report = voice_import(
        path=write_json([*rows, voice_row(provider_voice_id="new")]), approve=True, batch_size=4
    )

    assert (report.created, report.updated, report.unchanged) == (1, 3, 7)
    after = row_versions()
    rewritten = {vid for vid in before if after[vid] != before[vid]}
    assert rewritten == {"n03", "n05", "n07"}  # reactivated, approved again, changed
    assert all(after[vid][1] > before[vid][1] for vid in rewritten)
    voice = Voice.objects.get(provider_voice_id="n07")
    assert (voice.pk, voice.created_at) == (changed.pk, changed.created_at)
    assert (voice.description, voice.metadata) == ("Now with a description", {"v": 2})
    assert Voice.objects.filter(active=True, approved=True).count() == 11


def test_reimport_without_approve_neither_approves_nor_counts_approval(write_json, writer):
    path = write_json(numbered(6))
    voice_import(path=path, batch_size=4)

    report = voice_import(path=path, batch_size=4)
    approved = voice_import(path=path, approve=True, batch_size=4)

    assert (report.updated, report.unchanged) == (0, 6)
    assert (approved.updated, approved.unchanged) == (6, 0)
    assert Voice.objects.filter(approved=True).count() == 6


def test_a_bad_row_in_the_middle_leaves_nothing_stored(write_json, writer):
    voice_import(path=write_json([THAI]))
    before = row_versions()
    rows = [{**THAI, "description": "Rewritten"}, *numbered(30)]
    rows[16] = {**rows[16], "language": "klingon"}  # voice 17, after three batches of 5

    with pytest.raises(ImportFailed) as caught:
        voice_import(path=write_json(rows), batch_size=5)

    assert [str(error) for error in caught.value.report.errors] == [
        "line 18 (voice 17), field 'language': Unknown language 'klingon': pass an ISO 639-1 "
        "code such as 'th' or an English name such as 'Thai'."
    ]
    assert row_versions() == before  # the batches written before it were rolled back
    assert Voice.objects.get().description == "Warm, friendly narrator."
    assert not staging_table_exists()


def test_a_bad_row_in_the_middle_through_the_command(write_json):
    rows = numbered(30)
    rows[16] = {**rows[16], "gender": "robot"}

    message = fail(write_json(rows), "--batch-size", "5")

    assert "1 problem(s) in 1 row(s)" in message
    assert "line 18 (voice 17), field 'gender': unknown gender 'robot'" in message
    assert not Voice.objects.exists()


def test_dry_run_over_many_batches_counts_like_the_import(write_json, writer):
    rows = numbered(12)
    voice_import(path=write_json(rows[:8]), batch_size=3)
    before = row_versions()
    rows[2] = {**rows[2], "style": "brisk"}
    path = write_json(rows)

    dry = voice_import(path=path, dry_run=True, batch_size=3)
    dry_approving = voice_import(path=path, dry_run=True, approve=True, batch_size=5)

    assert (dry.created, dry.updated, dry.unchanged) == (4, 1, 7)
    assert (dry_approving.created, dry_approving.updated, dry_approving.unchanged) == (4, 8, 0)
    assert row_versions() == before
    assert not staging_table_exists()
    real = voice_import(path=path, batch_size=3)
    assert (real.created, real.updated, real.unchanged) == (4, 1, 7)


def test_each_batch_is_one_upsert_and_no_lookup(write_json):
    """The set-based path never asks the planner to find a batch's voices: the upsert's
    conflict check probes the unique index whatever the table's statistics say."""
    path = write_json(numbered(25))

    with CaptureQueriesContext(connection) as queries:
        voice_import(path=path, batch_size=10)

    statements = [query["sql"] for query in queries.captured_queries]
    upserts = [sql for sql in statements if "ON CONFLICT" in sql]
    assert len(upserts) == 3
    assert not [sql for sql in statements if "voices_voice" in sql and sql not in upserts]


@pytest.mark.django_db(transaction=True)
def test_an_import_that_wrote_leaves_the_table_analysed(write_json):
    """Search is planned from the table's statistics, its extended statistics included
    (voices.selectors); a first import into a new table would leave it with none. ANALYZE
    runs after the import commits, and only when it wrote something."""

    def analyses() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")  # read the counters afresh
            cursor.execute(
                "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'voices_voice'"
            )
            return cursor.fetchone()[0]

    path = write_json(numbered(25))
    before = analyses()

    voice_import(path=path, batch_size=10)
    after_first = analyses()
    voice_import(path=path, batch_size=10)  # unchanged: nothing written
    voice_import(path=path, approve=True, dry_run=True)

    assert after_first == before + 1
    assert analyses() == after_first
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stats_ext WHERE tablename = 'voices_voice' "
            "AND statistics_name = 'voice_lang_accent' AND most_common_vals IS NOT NULL"
        )
        assert cursor.fetchone()[0] == 1


# --- validation shortcuts ------------------------------------------------------------------


def django_says_valid(url: str) -> bool:
    try:
        _url_validator(url)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(
    "url",
    [
        "https://cdn.example.com/previews/a.mp3",
        "HTTP://CDN.example.com/a.mp3?x=1#t",
        "https://cdn.example.com",
        "https://cdn.example.com?x=/y",
        "https://user:pw@cdn.example.com:8080/a",
        "https://a?b@cdn.example.com/a",  # the validator takes "a?b" for a user name
        "https://[2001:db8::1]/a",
        "https://[2001:db8::zz]/a",
        "https://127.0.0.1:99999/a",
        "https://пример.рф/a",
        "https://-bad.example.com/a",
        "https://cdn.example.com/a b.mp3",
        "https://cdn.example.com/a\u00a0b.mp3",
        "https://cdn.example.com/a\tb.mp3",
        "https://localhost/a",
        "https:///a",
        "ftp://cdn.example.com/a",
        "cdn.example.com/a",
        "https://cdn.example.com/" + "a" * 2100,
        "https://" + "a" * 250 + ".com/a",
    ],
)
def test_url_check_agrees_with_djangos_validator(url):
    assert _is_http_url(url) is django_says_valid(url)


def test_escaped_backslash_before_u0000_is_not_a_nul(write_json, write_text):
    """A file without a NUL escape skips the scan for NULs; one with the text \\u0000
    (a backslash, then u0000) is scanned and holds none."""
    path = write_json([{**THAI, "metadata": {"note": "\\u0000"}}])
    csv_path = write_text(
        "provider,provider_voice_id,name,language,gender,metadata\n"
        'acme,c1,Ana,pt,female,"{""note"": ""\\\\u0000""}"\n'
        'acme,c2,Ana,pt,female,"{""note"": ""\\u0000""}"\n'
    )

    run(path)
    message = fail(csv_path)

    assert Voice.objects.get().metadata == {"note": "\\u0000"}
    assert "line 3 (row 2), field 'metadata': contains a NUL character" in message
    assert "row 1" not in message


def test_nul_in_an_elevenlabs_voice_is_named(write_text):
    voice = {**ELEVENLABS["voices"][1], "labels": {"gender": "male", "note": "a\x00b"}}
    path = write_text(json.dumps({"voices": [ELEVENLABS["voices"][0], voice]}), "v.json")

    message = fail(path)

    assert "line 1 (voice 2), field 'metadata': contains a NUL character" in message
