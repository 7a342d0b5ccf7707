"""The staff chat command, scripted through standard input, with the demo director."""

from __future__ import annotations

import io
import sys

import pytest
from django.core.management import CommandError, call_command

from drafts.models import Ad, Draft

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def catalogue(settings, make_voice, staff_user):
    settings.ADSTUDIO_PROVIDERS = {
        name: {**entry, "api_key": ""} for name, entry in settings.ADSTUDIO_PROVIDERS.items()
    }
    make_voice(language="th", gender="male", name="Somchai")
    make_voice(language="th", gender="female", name="Malee")


def chat(monkeypatch, stdin: str, *args: str) -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out = io.StringIO()
    call_command("chat", *args, stdout=out)
    return out.getvalue()


def test_a_scripted_session_generates_then_refines(monkeypatch, staff_user):
    output = chat(
        monkeypatch,
        "make the music more upbeat\n",
        "--brief",
        "Spotify Premium family plan",
        "--language",
        "Thai",
    )

    ad = Ad.objects.get()
    assert ad.owner == staff_user and ad.language == "th"
    assert "-> search_voices" in output
    assert "++ voices v1" in output and "++ music v1" in output and "++ sfx v1" in output
    assert "++ music v2" in output
    assert output.count("assistant> ") == 2
    assert Draft.objects.filter(ad=ad, kind="music").count() == 2


def test_continuing_an_existing_ad(monkeypatch):
    chat(monkeypatch, "", "--brief", "Coffee shop", "--language", "th")
    ad = Ad.objects.get()

    output = chat(monkeypatch, "more sound effects please\n", "--ad", str(ad.pk))

    assert "continuing conversation" in output
    assert "++ sfx v2" in output
    assert Draft.objects.filter(ad=ad, kind="sfx").count() == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ad", "not-a-uuid"], "No ad with id 'not-a-uuid'"),
        (["--brief", "x"], "--language is required"),
        (["--brief", "x", "--language", "elvish"], "Unknown language 'elvish'"),
        (["--brief", "x", "--language", "th", "--duration", "500"], "between 5 and 120"),
        (["--brief", "x", "--language", "th", "--provider", "qwen"], "DASHSCOPE_API_KEY"),
    ],
)
def test_bad_arguments_are_clear_errors(monkeypatch, args, message):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(CommandError, match=message):
        call_command("chat", *args, stdout=io.StringIO())
