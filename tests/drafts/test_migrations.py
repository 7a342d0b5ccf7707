"""The migration into the design's version shapes, on drafts written in the old ones."""

from __future__ import annotations

import pytest

from drafts.models import Draft
from drafts.payloads import VERSION_SHAPES
from tests.support.migrations import migrate_to, migrate_to_latest

BEFORE = [("drafts", "0002_default_order_and_indexes")]
AFTER = [("drafts", "0004_draft_payload_in_version_shape")]

OLD_VOICES = {
    "tracks": [
        {
            "voiceId": "7",
            "voiceName": "Araya",
            "text": "One plan.",
            "playAfter": "start",
            "overlap": 0,
        },
        {
            "voiceId": "8",
            "voiceName": "Somchai",
            "text": "For all.",
            "playAfter": "previous",
            "overlap": 0.5,
        },
        {"voiceId": "7", "voiceName": "Araya", "text": "Today.", "playAfter": "0", "overlap": 0},
    ],
    "estimatedDurationS": 4.1,
}
OLD_MUSIC = {"prompt": "warm acoustic pop", "provider": "mubert", "duration": 30}
OLD_SFX = {
    "prompts": [
        {"description": "soft whoosh", "placement": {"type": "start"}},
        {"description": "chime", "placement": {"type": "afterVoice", "index": 1}, "duration": 1.5},
    ]
}


@pytest.mark.django_db(transaction=True)
def test_old_payloads_are_rewritten_into_the_version_shapes_and_back(ad):
    old_apps = migrate_to(BEFORE)
    try:
        old_draft = old_apps.get_model("drafts", "Draft")

        def make(kind, version, payload, summary=""):
            return old_draft.objects.create(
                ad_id=ad.pk, kind=kind, version=version, payload=payload, summary=summary
            ).pk

        voices = make("voices", 1, OLD_VOICES)
        music = make("music", 1, OLD_MUSIC, summary="mubert, 30 s: warm acoustic pop")
        sfx = make("sfx", 1, OLD_SFX)
        odd = make("music", 2, {"note": "written by hand"})

        migrate_to(AFTER)
        payloads = dict(Draft.objects.values_list("pk", "payload"))
        music_summary = Draft.objects.get(pk=music).summary

        # Backwards gives the old shapes again (a rollback loses nothing).
        migrate_to(BEFORE)
        restored = dict(old_draft.objects.values_list("pk", "payload"))
    finally:
        migrate_to_latest()

    assert payloads[voices] == {
        "voiceTracks": [
            {"id": "track-0", "voiceId": "7", "voiceName": "Araya", "text": "One plan.",
             "playAfter": "start", "overlap": 0, "speed": 1.0},
            {"id": "track-1", "voiceId": "8", "voiceName": "Somchai", "text": "For all.",
             "playAfter": "track-0", "overlap": 0.5, "speed": 1.0},
            {"id": "track-2", "voiceId": "7", "voiceName": "Araya", "text": "Today.",
             "playAfter": "track-0", "overlap": 0, "speed": 1.0},
        ],
        "estimatedDurationS": 4.1,
    }  # fmt: skip
    assert payloads[music] == {
        "musicPrompt": "warm acoustic pop",
        "musicProvider": "mubert",
        "duration": 30,
    }
    assert music_summary == "Music (mubert), 30 s: warm acoustic pop"
    assert payloads[sfx] == {
        "soundFxPrompts": [
            {"description": "soft whoosh", "placement": {"type": "start"}, "duration": 3.0,
             "playAfter": "start", "overlap": 0},
            {"description": "chime", "placement": {"type": "afterVoice", "index": 1},
             "duration": 1.5, "playAfter": "start", "overlap": 0},
        ]
    }  # fmt: skip
    # A payload in no known shape keeps its content beside its kind's empty shape.
    assert payloads[odd] == {
        "musicPrompt": "",
        "musicProvider": "loudly",
        "legacyPayload": {"note": "written by hand"},
    }
    # Every rewritten payload reads as its kind's version shape.
    for pk, kind in ((voices, "voices"), (music, "music"), (sfx, "sfx")):
        VERSION_SHAPES[kind].model_validate(payloads[pk])

    assert restored[music] == OLD_MUSIC
    assert restored[odd] == {"note": "written by hand"}
    assert restored[voices]["tracks"][1]["playAfter"] == "0"  # "previous" of track 1
    assert [t["text"] for t in restored[voices]["tracks"]] == ["One plan.", "For all.", "Today."]
    assert [p["description"] for p in restored[sfx]["prompts"]] == ["soft whoosh", "chime"]
