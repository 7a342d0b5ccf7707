"""Draft payloads rewritten into the design's version shapes, which the web client reads.

voices: {tracks: [{voiceId, voiceName, text, playAfter: start|previous|N, overlap}],
         estimatedDurationS}
     -> {voiceTracks: [{id: track-N, voiceId, voiceName, text, playAfter: start|track-N,
         overlap, speed: 1.0}], estimatedDurationS}
music:  {prompt, provider, duration} -> {musicPrompt, musicProvider, duration}
sfx:    {prompts: [{description, placement, duration?}]}
     -> {soundFxPrompts: [{description, placement, duration (3 s if absent),
         playAfter: "start", overlap: 0}]}

Drafts are immutable to their users; a change of the stored schema is ours to migrate.
Payloads already in the new shape are left alone, so the migration can run twice. A
payload in neither shape (no draft tool wrote one) becomes its kind's empty shape with the
original kept under ``legacyPayload``, so the next migration's constraint holds and
nothing is lost. The conversion is written out here, not imported, so it stays what it
was when this ran.
"""

from django.db import migrations

BATCH = 500


def _track_ref(value, index):
    if value in (None, ""):
        return "start" if index == 0 else f"track-{index - 1}"
    value = str(value)
    if value == "start" or value.startswith("track-"):
        return value
    if value == "previous":
        return f"track-{index - 1}" if index else "start"
    if value.isascii() and value.isdigit():
        return f"track-{int(value)}"
    return value


def voices_forward(payload):
    if "voiceTracks" in payload or "tracks" not in payload:
        return None
    tracks = []
    for index, track in enumerate(payload.get("tracks") or []):
        tracks.append(
            {
                "id": f"track-{index}",
                "voiceId": str(track.get("voiceId", "")),
                "voiceName": track.get("voiceName", ""),
                "text": track.get("text", ""),
                "playAfter": _track_ref(track.get("playAfter"), index),
                "overlap": track.get("overlap", 0),
                "speed": track.get("speed", 1.0),
            }
        )
    new = {"voiceTracks": tracks}
    if "estimatedDurationS" in payload:
        new["estimatedDurationS"] = payload["estimatedDurationS"]
    return new


def music_forward(payload):
    if "musicPrompt" in payload or "prompt" not in payload:
        return None
    return {
        "musicPrompt": payload["prompt"],
        "musicProvider": payload.get("provider") or "loudly",
        "duration": payload.get("duration"),
    }


def sfx_forward(payload):
    if "soundFxPrompts" in payload or "prompts" not in payload:
        return None
    prompts = []
    for prompt in payload.get("prompts") or []:
        prompts.append(
            {
                "description": prompt.get("description", ""),
                "placement": prompt.get("placement") or {"type": "end"},
                "duration": prompt.get("duration") or 3.0,
                "playAfter": "start",
                "overlap": 0,
            }
        )
    return {"soundFxPrompts": prompts}


def voices_backward(payload):
    if "voiceTracks" not in payload:
        return None
    tracks = []
    for track in payload["voiceTracks"]:
        play_after = track.get("playAfter", "start")
        tracks.append(
            {
                "voiceId": track.get("voiceId", ""),
                "voiceName": track.get("voiceName", ""),
                "text": track.get("text", ""),
                "playAfter": play_after.removeprefix("track-"),
                "overlap": track.get("overlap", 0),
            }
        )
    old = {"tracks": tracks}
    if "estimatedDurationS" in payload:
        old["estimatedDurationS"] = payload["estimatedDurationS"]
    return old


def music_backward(payload):
    if "musicPrompt" not in payload:
        return None
    return {
        "prompt": payload["musicPrompt"],
        "provider": payload.get("musicProvider", "loudly"),
        "duration": payload.get("duration"),
    }


def sfx_backward(payload):
    if "soundFxPrompts" not in payload:
        return None
    return {
        "prompts": [
            {k: fx[k] for k in ("description", "placement", "duration") if k in fx}
            for fx in payload["soundFxPrompts"]
        ]
    }


FORWARD = {"voices": voices_forward, "music": music_forward, "sfx": sfx_forward}
NEW_KEYS = {"voices": "voiceTracks", "music": "musicPrompt", "sfx": "soundFxPrompts"}
EMPTY = {
    "voices": {"voiceTracks": []},
    "music": {"musicPrompt": "", "musicProvider": "loudly"},
    "sfx": {"soundFxPrompts": []},
}


def _forward(kind, payload):
    """The new shape of ``payload``, or None when it already is in it."""
    if isinstance(payload, dict):
        if NEW_KEYS[kind] in payload:
            return None
        new = FORWARD[kind](payload)
        if new is not None:
            return new
    return {**EMPTY[kind], "legacyPayload": payload}
BACKWARD = {"voices": voices_backward, "music": music_backward, "sfx": sfx_backward}


def _music_summary_forward(draft, old_payload):
    """``loudly, 30 s: ...`` became ``Music (loudly), 30 s: ...``."""
    provider = old_payload.get("provider") or "loudly"
    if draft.summary.startswith(f"{provider}, "):
        return f"Music ({provider}), {draft.summary[len(provider) + 2 :]}"[:500]
    return draft.summary


def _rewrite(apps, convert, *, forward):
    Draft = apps.get_model("drafts", "Draft")
    pending = []
    rows = Draft.objects.order_by("pk").only("pk", "kind", "payload", "summary")
    for draft in rows.iterator(chunk_size=BATCH):
        if draft.kind not in NEW_KEYS:
            continue
        old = draft.payload
        new = convert(draft.kind, old)
        if new is None:
            continue
        if forward and draft.kind == "music" and isinstance(old, dict):
            draft.summary = _music_summary_forward(draft, old)
        draft.payload = new
        pending.append(draft)
        if len(pending) >= BATCH:
            Draft.objects.bulk_update(pending, ["payload", "summary"])
            pending = []
    if pending:
        Draft.objects.bulk_update(pending, ["payload", "summary"])


def _backward(kind, payload):
    if not isinstance(payload, dict):
        return None
    if "legacyPayload" in payload:
        return payload["legacyPayload"]
    return BACKWARD[kind](payload)


def forwards(apps, schema_editor):
    _rewrite(apps, _forward, forward=True)


def backwards(apps, schema_editor):
    _rewrite(apps, _backward, forward=False)


class Migration(migrations.Migration):
    dependencies = [
        ("drafts", "0002_default_order_and_indexes"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
