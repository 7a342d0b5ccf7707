"""``import_voices``: three formats, idempotent upserts, approvals kept, and bad input
reported by line and field with nothing written."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from tests.voices.conftest import voice_row
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
        ("[" * 100_000 + "]" * 100_000, "values nested too deeply"),
    ],
    ids=["nan", "infinity", "5000 digits", "nested 100000 deep"],
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


@pytest.mark.django_db(transaction=True)
def test_an_import_gives_the_planner_statistics_after_its_first_batch(write_json):
    """Without them, a first import looks each batch up by provider alone and turns
    quadratic (docs/BENCHMARKS.md); ANALYZE runs once, inside the import's transaction."""
    from django.db import connection

    def analyses() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = 'voices_voice'"
            )
            return cursor.fetchone()[0]

    rows = [voice_row(provider_voice_id=f"v{i}", name=f"Voice {i}") for i in range(25)]
    before = analyses()
    voice_import(path=write_json(rows), batch_size=10)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # read the counters afresh
    after_first = analyses()
    voice_import(path=write_json(rows), batch_size=10)  # unchanged: nothing written
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")

    assert Voice.objects.count() == 25
    assert after_first == before + 1
    assert analyses() == after_first
