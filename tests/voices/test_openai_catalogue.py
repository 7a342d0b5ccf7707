"""OpenAI's fixed voice list (``voices/fixtures/openai_voices.json``): it imports as the
catalogue's OpenAI voices, each under the id the speech adapter sends, with what OpenAI does
not publish left unknown."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command

from speech.openai_speech import GPT_VOICES, models_reading
from voices.models import Gender, Voice

pytestmark = pytest.mark.django_db

LISTING = Path(__file__).resolve().parents[2] / "voices" / "fixtures" / "openai_voices.json"


def import_listing(*args: str) -> str:
    out = io.StringIO()
    call_command("import_voices", str(LISTING), *args, stdout=out)
    return out.getvalue()


def test_the_listing_imports_one_voice_per_id_the_adapter_sends():
    output = import_listing("--approve")

    assert "13 created" in output
    voices = Voice.objects.filter(provider="openai")
    assert set(voices.values_list("provider_voice_id", flat=True)) == GPT_VOICES
    assert all(voice.approved and voice.active for voice in voices)


def test_each_voice_lists_the_models_that_read_it():
    import_listing()

    for voice in Voice.objects.filter(provider="openai"):
        assert voice.metadata["models"] == models_reading(voice.provider_voice_id)
    marin = Voice.objects.get(provider="openai", provider_voice_id="marin")
    assert "tts-1-hd" not in marin.metadata["models"]


def test_what_openai_does_not_publish_is_left_unknown():
    import_listing()

    voices = Voice.objects.filter(provider="openai")
    assert {(v.language, v.locale, v.gender, v.age, v.accent) for v in voices} == {
        ("en", "", Gender.NEUTRAL, "", "")
    }
    assert all(v.metadata["unpublished"] == ["gender", "age", "accent"] for v in voices)


def test_a_second_import_changes_nothing():
    import_listing()

    output = import_listing()

    assert "0 created, 0 updated, 13 unchanged" in output


def test_the_listing_names_no_other_provider():
    rows = json.loads(LISTING.read_text(encoding="utf-8"))

    assert {row["provider"] for row in rows} == {"openai"}
    assert len(rows) == len({row["provider_voice_id"] for row in rows}) == 13
