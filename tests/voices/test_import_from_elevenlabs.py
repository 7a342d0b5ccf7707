"""A catalogue imported from what ElevenLabs' GET /v1/voices answers (the fake server's
listing, fetched over HTTP as an export is) holds voices the ElevenLabs adapter reads: the
provider is ``elevenlabs`` and ``provider_voice_id`` is the id the adapter puts in the path."""

from __future__ import annotations

import io

import httpx
import pytest
from django.core.management import call_command

from speech.base import SpeechRequest
from speech.elevenlabs import ElevenLabsSpeech
from testbed.fake_elevenlabs import TEST_API_KEY, VOICE_ID
from voices.models import Voice

pytestmark = pytest.mark.django_db


def test_an_export_of_get_v1_voices_imports_voices_the_adapter_reads(fake_elevenlabs, tmp_path):
    export = httpx.get(
        f"{fake_elevenlabs.base_url}/v1/voices", headers={"xi-api-key": TEST_API_KEY}, timeout=5
    )
    assert export.status_code == 200
    path = tmp_path / "voices.json"
    path.write_bytes(export.content)
    out = io.StringIO()

    call_command("import_voices", str(path), stdout=out)

    assert f"{path} (elevenlabs): 2 created" in out.getvalue()
    rachel = Voice.objects.get(provider_voice_id=VOICE_ID)
    assert (rachel.provider, rachel.name, rachel.language, rachel.locale, rachel.gender) == (
        "elevenlabs",
        "Rachel",
        "en",
        "en-US",
        "female",
    )
    niran = Voice.objects.get(name="Niran")
    assert (niran.provider, niran.language, niran.locale) == ("elevenlabs", "th", "th-TH")

    adapter = ElevenLabsSpeech(api_key=TEST_API_KEY, base_url=fake_elevenlabs.base_url)
    result = adapter.synthesize(
        SpeechRequest(
            provider=niran.provider,
            voice_id=niran.provider_voice_id,
            text="สวัสดีครับ",
            language=niran.language,
            locale=niran.locale,
            settings=niran.metadata["settings"],  # the voice's settings, as exported
        )
    )

    [sent] = fake_elevenlabs.speech_requests()
    assert sent.path == "/v1/text-to-speech/th4iVoiceNiranXyZ123"
    assert sent.voice_id == niran.provider_voice_id
    assert sent.body["voice_settings"] == {
        "stability": 0.5,
        "similarity_boost": 0.75,
        "style": 0.0,
        "use_speaker_boost": True,
        "speed": 1.0,
    }
    assert result.characters == len("สวัสดีครับ")
