"""Importing Azure AI Speech's ``GET /cognitiveservices/voices/list``: detected, mapped onto
our fields (the short name the adapter sends as the id, styles searchable), bad voices
named by Azure's field, and the listing the fake Azure server serves accepted as it is."""

from __future__ import annotations

import io
import json

import httpx
import pytest
from django.core.management import CommandError, call_command

from testbed.fake_azure_speech import TEST_AZURE_KEY, VOICES
from tests.voices.conftest import voice_row
from voices.catalogue_readers import CatalogueFormat, open_catalogue
from voices.models import Voice
from voices.selectors import search_voices
from voices.services import ImportFailed, voice_import

pytestmark = pytest.mark.django_db

JENNY = {
    "Name": "Microsoft Server Speech Text to Speech Voice (en-US, JennyNeural)",
    "DisplayName": "Jenny",
    "LocalName": "Jenny",
    "ShortName": "en-US-JennyNeural",
    "Gender": "Female",
    "Locale": "en-US",
    "LocaleName": "English (United States)",
    "StyleList": [
        "assistant",
        "chat",
        "customerservice",
        "newscast",
        "angry",
        "cheerful",
        "sad",
        "excited",
        "friendly",
        "terrified",
        "shouting",
        "unfriendly",
        "whispering",
        "hopeful",
    ],
    "SampleRateHertz": "24000",
    "VoiceType": "Neural",
    "Status": "GA",
    "WordsPerMinute": "152",
}
NIWAT = {
    "Name": "Microsoft Server Speech Text to Speech Voice (th-TH, NiwatNeural)",
    "DisplayName": "Niwat",
    "LocalName": "นิวัฒน์",
    "ShortName": "th-TH-NiwatNeural",
    "Gender": "Male",
    "Locale": "th-TH",
    "LocaleName": "Thai (Thailand)",
    "SampleRateHertz": "24000",
    "VoiceType": "Neural",
    "Status": "GA",
}


def listing(tmp_path, voices, name="voices-list.json"):
    path = tmp_path / name
    path.write_text(
        "[\n" + ",\n".join(json.dumps(v, ensure_ascii=False) for v in voices) + "\n]\n",
        encoding="utf-8",
    )
    return path


def test_the_listing_the_fake_azure_server_serves_imports_as_is(fake_azure_speech, tmp_path):
    reply = httpx.get(
        f"{fake_azure_speech.base_url}/cognitiveservices/voices/list",
        headers={"Ocp-Apim-Subscription-Key": TEST_AZURE_KEY},
    )
    reply.raise_for_status()
    path = tmp_path / "azure.json"
    path.write_bytes(reply.content)

    report = voice_import(path=path)

    assert report.format == "azure"
    assert (report.created, report.skipped) == (len(VOICES), 0)
    voices = {v.provider_voice_id: v for v in Voice.objects.filter(provider="azure")}
    assert set(voices) == {v["ShortName"] for v in VOICES}
    yunxi = voices["zh-CN-YunxiNeural"]
    assert (yunxi.name, yunxi.language, yunxi.locale, yunxi.gender) == (
        "Yunxi",
        "zh",
        "zh-CN",
        "male",
    )
    assert yunxi.style == "narration-relaxed, cheerful, sports commentary"
    assert "Roles: Narrator, YoungAdultMale, Boy." in yunxi.description
    assert yunxi.metadata["LocalName"] == "云希"
    multilingual = voices["en-US-JennyMultilingualNeural"]
    assert multilingual.style == ""
    assert multilingual.description == "Also speaks: de-DE, fr-FR, th-TH."


def test_the_command_detects_the_listing_and_maps_each_field(tmp_path):
    path = listing(tmp_path, [JENNY, NIWAT])
    out = io.StringIO()

    call_command("import_voices", str(path), stdout=out)

    assert f"{path} (azure): 2 created" in out.getvalue()
    jenny = Voice.objects.get(provider="azure", provider_voice_id="en-US-JennyNeural")
    assert (jenny.name, jenny.language, jenny.locale, jenny.gender) == (
        "Jenny",
        "en",
        "en-US",
        "female",
    )
    # As many styles as fit the field, every one in the description.
    assert jenny.style == "assistant, chat, customerservice, newscast, angry, cheerful, sad"
    assert len(jenny.style) <= 64
    assert jenny.description.startswith("Speaking styles: assistant, chat, customerservice")
    assert jenny.description.endswith("whispering, hopeful.")
    assert jenny.metadata == JENNY
    niwat = Voice.objects.get(provider_voice_id="th-TH-NiwatNeural")
    assert (niwat.language, niwat.locale, niwat.gender, niwat.style) == ("th", "th-TH", "male", "")


def test_a_style_past_the_fields_length_is_still_found_by_search(tmp_path):
    voice_import(path=listing(tmp_path, [JENNY, NIWAT]), approve=True)

    found = search_voices(language="en", style="whispering")

    assert [v["name"] for v in found] == ["Jenny"]
    assert search_voices(language="en", style="lullaby") == []


def test_a_reimport_changes_nothing(tmp_path):
    path = listing(tmp_path, [JENNY, NIWAT])
    voice_import(path=path)

    again = voice_import(path=path)

    assert (again.created, again.updated, again.unchanged) == (0, 0, 2)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"ShortName": None}, "field 'ShortName': required field is missing"),
        ({"DisplayName": ""}, "field 'DisplayName': required field is missing"),
        ({"Gender": "Robot"}, "field 'Gender': unknown gender 'Robot'"),
        ({"Locale": "xx-QQ"}, "field 'Locale': Unknown language 'xx-QQ'"),
        ({"Locale": None}, "field 'Locale': required field is missing"),
        ({"ShortName": 7}, "field 'ShortName': expected text, got the number 7"),
        ({"StyleList": "cheerful"}, '"StyleList" must be a list of names, got text'),
        ({"RolePlayList": [1]}, '"RolePlayList" must be a list of names, got a list'),
    ],
)
def test_a_bad_voice_is_named_by_its_azure_field_and_nothing_is_written(tmp_path, change, expected):
    path = listing(tmp_path, [NIWAT, {**JENNY, **change}])

    with pytest.raises(ImportFailed) as caught:
        voice_import(path=path)

    lines = caught.value.report.error_lines()
    assert len(lines) == 1
    assert lines[0].startswith("line 3 (voice 2)")
    assert expected in lines[0]
    assert not Voice.objects.exists()


def test_a_listing_entry_that_is_not_an_object(tmp_path):
    path = listing(tmp_path, [NIWAT, "en-US-JennyNeural"])

    with pytest.raises(ImportFailed) as caught:
        voice_import(path=path, file_format="azure")

    assert caught.value.report.error_lines() == [
        "line 3 (voice 2): expected a voice object, got text"
    ]


def test_our_own_json_holding_azure_metadata_is_still_our_format(tmp_path):
    path = tmp_path / "ours.json"
    row = voice_row(provider="azure", provider_voice_id="th-TH-NiwatNeural", metadata=NIWAT)
    path.write_text(json.dumps([row]), encoding="utf-8")

    assert open_catalogue(path).format is CatalogueFormat.JSON
    assert voice_import(path=path).created == 1


def test_format_azure_on_an_object_explains_the_expected_shape(tmp_path):
    path = tmp_path / "voices.json"
    path.write_text(json.dumps({"voices": [JENNY]}), encoding="utf-8")

    with pytest.raises(CommandError, match="expected Azure's voices/list response"):
        call_command("import_voices", str(path), "--format", "azure", stdout=io.StringIO())
