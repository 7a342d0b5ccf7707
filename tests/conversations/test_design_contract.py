"""The design's own tool calls, over the real loop and HTTP: a model that follows the
design's wording gets drafts in the design's version shapes, on every chat provider."""

from __future__ import annotations

import json

import pytest

from conversations.models import Message
from conversations.run_request import RunRequest
from conversations.services import brief_send
from drafts.models import Draft
from drafts.payloads import VERSION_SHAPES
from testbed.fake_openai import call, turn
from tests.conversations.story import run_of

pytestmark = pytest.mark.django_db(transaction=True)  # runs start when their row commits

VOICE_TRACK_KEYS = {"id", "voiceId", "voiceName", "text", "playAfter", "overlap", "speed"}
SFX_PROMPT_KEYS = {"description", "placement", "duration", "playAfter", "overlap"}


@pytest.mark.parametrize("provider", ["openai", "qwen", "kimi"])
def test_the_designs_example_calls_make_drafts_in_the_designs_shapes(
    fake_providers, en_ad, voices, provider
):
    jack, rachel = (str(v.pk) for v in voices)
    fake_providers.script(
        # The design's search: an English language name, a gender, a count.
        turn(tool_calls=[call("search_voices", {"language": "english", "count": 10})]),
        turn(
            tool_calls=[
                # The design's own test of create_voice_draft.
                call(
                    "create_voice_draft",
                    {
                        "tracks": [
                            {"voiceId": jack, "text": "Hello world"},
                            {
                                "voiceId": rachel,
                                "text": "Goodbye",
                                "playAfter": "track-0",
                                "overlap": -0.5,
                            },
                        ]
                    },
                ),
                call(
                    "create_music_draft",
                    {"prompt": "upbeat acoustic pop", "provider": "loudly", "duration": 30},
                ),
                call("create_sfx_draft", {"prompts": [{"description": "door bell"}]}),
            ]
        ),
        turn("Voices v1, music v1 and sound effects v1 are ready."),
    )

    run = run_of(brief_send(request=RunRequest(ad=en_ad, provider=provider)))

    assert run.status == "succeeded", run.error_message
    assert run.provider == provider
    drafts = {d.kind: d for d in Draft.objects.filter(ad=en_ad)}
    assert {kind: d.label for kind, d in drafts.items()} == {
        "voices": "v1",
        "music": "v1",
        "sfx": "v1",
    }
    for kind, draft in drafts.items():
        VERSION_SHAPES[kind].model_validate(draft.payload)

    tracks = drafts["voices"].payload["voiceTracks"]
    assert all(set(track) == VOICE_TRACK_KEYS for track in tracks)
    assert [(t["id"], t["voiceId"], t["playAfter"], t["overlap"], t["speed"]) for t in tracks] == [
        ("track-0", jack, "start", 0.0, 1.0),
        ("track-1", rachel, "track-0", -0.5, 1.0),
    ]
    assert drafts["music"].payload == {
        "musicPrompt": "upbeat acoustic pop",
        "musicProvider": "loudly",
        "duration": 30,
    }
    (effect,) = drafts["sfx"].payload["soundFxPrompts"]
    assert set(effect) == SFX_PROMPT_KEYS
    assert effect == {
        "description": "door bell",
        "placement": {"type": "end"},
        "duration": 3.0,
        "playAfter": "start",
        "overlap": 0.0,
    }

    results = [
        json.loads(m.text)
        for m in Message.objects.filter(conversation=run.conversation, role="tool").order_by("seq")
    ]
    search, *created = results
    assert search["count"] == 2
    for voice in search["voices"]:
        assert {"id", "name", "language", "gender"} <= set(voice)
        assert "provider" not in voice and "locale" not in voice  # the same on every voice
    assert [(r["versionId"], r["status"]) for r in created] == [("v1", "draft")] * 3
