"""Renders with the cast voices read by their speech provider: a configured provider's
voice beside a guide voice, each said aloud in the timeline; a line read once and taken
from the cache after; the cost estimated before, billed after, and capped per workspace;
a provider that keeps failing leaves the guide voice reading, with a warning."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from drafts.payloads import VoiceTrack, VoiceVersion
from drafts.services import draft_create
from renders.models import Render
from testbed.fake_openai_speech import server_error
from tests.support.api import api_for
from tests.support.versions import music
from voices.models import Voice

pytestmark = pytest.mark.django_db(transaction=True)  # the task runs when the row commits

CORAL = "Fresh savings all week, only at Corner Market."
NARRATOR = "Terms apply."


@pytest.fixture
def cast(db):
    """A voice of OpenAI's (configured in the test) and one of ElevenLabs' (not)."""
    coral = Voice.objects.create(
        provider="openai",
        provider_voice_id="coral",
        name="Coral",
        language="en",
        gender="neutral",
        approved=True,
    )
    rachel = Voice.objects.create(
        provider="elevenlabs",
        provider_voice_id="21m00Tcm4TlvDq8ikWAM",
        name="Rachel",
        language="en",
        gender="female",
        age="young",
        approved=True,
    )
    return coral, rachel


@pytest.fixture
def speaking(settings, fake_openai_speech):
    settings.ADSTUDIO_SPEECH_PROVIDERS = fake_openai_speech.settings()
    return fake_openai_speech


@pytest.fixture
def ad(make_ad, cast):
    coral, rachel = cast
    ad = make_ad(language="en", duration_s=5)
    tracks = [
        VoiceTrack(
            id="track-0",
            voiceId=str(coral.pk),
            voiceName="Coral",
            text=CORAL,
            playAfter="start",
            overlap=0,
        ),
        VoiceTrack(
            id="track-1",
            voiceId=str(rachel.pk),
            voiceName="Rachel",
            text=NARRATOR,
            playAfter="track-0",
            overlap=0,
        ),
    ]
    draft_create(ad=ad, version=VoiceVersion(voiceTracks=tracks, estimatedDurationS=5.0))
    draft_create(ad=ad, version=music("warm pad at 90 bpm", duration=5))
    return ad


def test_a_configured_voice_speaks_beside_a_guide_voice_and_the_render_says_which(
    ad, user, speaking
):
    api = api_for(user)

    asked = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json")

    assert asked.status_code == 202
    body = api.get(f"/api/renders/{asked.json()['id']}").json()
    assert body["status"] == "done", body
    voices = [s for s in body["timeline"]["segments"] if s["kind"] == "voice"]
    assert [(s["reader"], s["readBy"]) for s in voices] == [
        ("openai", "OpenAI"),
        ("guide", "guide voice: ElevenLabs not configured"),
    ]
    # OpenAI's line is as long as the fake read it: 60 ms a character at speed 1.
    spoken = voices[0]["endS"] - voices[0]["startS"]
    assert spoken == pytest.approx(len(CORAL) * 0.06, abs=0.02)
    assert speaking.count == 1
    assert speaking.bodies[0]["voice"] == "coral" and speaking.bodies[0]["input"] == CORAL
    assert speaking.bodies[0]["response_format"] == "pcm"
    music_segment = next(s for s in body["timeline"]["segments"] if s["kind"] == "music")
    assert music_segment["madeBy"] == "placeholder bed: Loudly not connected"
    billed = body["timeline"]["speech"]
    expected = (Decimal(len(CORAL)) * Decimal(30) / Decimal(1_000_000)).quantize(
        Decimal("0.000001")
    )
    assert billed == {
        "characters": len(CORAL),
        "costUsd": str(expected),
        "costExact": True,
        "cachedLines": 0,
    }
    render = Render.objects.get(pk=asked.json()["id"])
    assert render.speech_characters == len(CORAL) and render.speech_cost_usd == expected


def test_a_line_read_before_is_taken_from_the_cache_and_costs_nothing(ad, user, speaking):
    api = api_for(user)
    first = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    assert speaking.count == 1
    estimate = api.post(f"/api/ads/{ad.pk}/renders?estimate=1", {"music": None}, format="json")
    assert estimate.status_code == 200
    assert estimate.json()["characters"] == 0 and estimate.json()["costUsd"] == "0"

    # Another combination of the same voices (no music): a music-only change.
    again = api.post(f"/api/ads/{ad.pk}/renders", {"music": None}, format="json").json()

    assert again["id"] != first["id"]
    body = api.get(f"/api/renders/{again['id']}").json()
    assert body["status"] == "done", body
    assert speaking.count == 1  # no second request for the unchanged line
    reader = next(s for s in body["timeline"]["segments"] if s["ref"] == "track-0")
    assert reader["readBy"] == "OpenAI (cached)"
    assert body["timeline"]["speech"]["characters"] == 0
    assert body["timeline"]["speech"]["cachedLines"] == 1


def test_the_estimate_is_what_is_billed(ad, user, speaking):
    api = api_for(user)

    estimate = api.post(f"/api/ads/{ad.pk}/renders?estimate=1", {}, format="json")

    assert estimate.status_code == 200
    quoted = estimate.json()
    assert Render.objects.count() == 0  # an estimate renders nothing
    assert speaking.count == 0
    assert [line["reader"] for line in quoted["lines"]] == ["openai", "guide"]
    assert quoted["lines"][1]["note"] == "guide voice: ElevenLabs not configured"
    made = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    billed = api.get(f"/api/renders/{made['id']}").json()["timeline"]["speech"]
    assert (quoted["characters"], quoted["costUsd"]) == (billed["characters"], billed["costUsd"])
    assert quoted["capUsd"] == "5.0" and quoted["withinCap"] is True


def test_a_render_over_the_workspace_cap_is_refused_before_it_starts(ad, user, speaking):
    ad.workspace.speech_cost_cap_usd = Decimal("0.00")
    ad.workspace.save()
    api = api_for(user)

    refused = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json")

    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "speech_cost_over_cap"
    assert f"({len(CORAL)} characters)" in error["message"]
    assert "cap of $0.00 a render" in error["message"]
    assert Render.objects.count() == 0 and speaking.count == 0
    quoted = api.post(f"/api/ads/{ad.pk}/renders?estimate=1", {}, format="json").json()
    assert quoted["withinCap"] is False and quoted["capUsd"] == "0.00"


def test_a_provider_that_keeps_failing_leaves_the_guide_voice_reading(
    ad, user, speaking, settings, caplog
):
    settings.ADSTUDIO_PROVIDER_RETRY = {"max_attempts": 2, "base_delay": 0.01, "jitter": 0}
    speaking.fail(server_error(), server_error())
    api = api_for(user)

    with caplog.at_level(logging.WARNING):
        made = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()

    body = api.get(f"/api/renders/{made['id']}").json()
    assert body["status"] == "done", body
    assert speaking.count == 2  # the retry policy's two attempts
    reader = next(s for s in body["timeline"]["segments"] if s["ref"] == "track-0")
    assert (reader["reader"], reader["readBy"]) == ("guide", "guide voice: OpenAI failed")
    assert any(
        w.startswith("track-0: read by the guide voice, OpenAI failed (transient")
        for w in body["timeline"]["warnings"]
    )
    assert body["timeline"]["speech"]["characters"] == 0
    assert speaking.api_key not in caplog.text and speaking.api_key not in str(body)


def test_a_bad_estimate_flag_is_a_400_naming_it(ad, user):
    answer = api_for(user).post(f"/api/ads/{ad.pk}/renders?estimate=maybe", {}, format="json")

    assert answer.status_code == 400
    assert answer.json()["error"]["fields"]["estimate"] == ['"maybe" is not a flag: use 1 or 0.']
    assert Render.objects.count() == 0


# --- Faults: the disk full at the cache, the database lost mid-render ---------------------


def test_a_full_disk_at_the_cache_still_renders_with_the_line_read(
    ad, user, speaking, media, monkeypatch, caplog
):
    from adstudio.file_storage import WholeFileSystemStorage
    from tests.renders.test_lifecycle import DiskFills

    real = WholeFileSystemStorage._save

    def full_under_speech(self, name, content):
        if name.startswith("speech/"):
            content = DiskFills(content.read())
        return real(self, name, content)

    monkeypatch.setattr(WholeFileSystemStorage, "_save", full_under_speech)
    api = api_for(user)

    with caplog.at_level(logging.WARNING, logger="speech.cache"):
        made = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()

    body = api.get(f"/api/renders/{made['id']}").json()
    assert body["status"] == "done", body
    reader = next(s for s in body["timeline"]["segments"] if s["ref"] == "track-0")
    assert reader["readBy"] == "OpenAI"
    assert "No space left on device" in caplog.text
    speech_folder = media / "speech"
    assert not speech_folder.exists() or not any(p.is_file() for p in speech_folder.rglob("*"))
    # Not kept, so not taken for cached: the estimate prices the line again.
    quoted = api.post(f"/api/ads/{ad.pk}/renders?estimate=1", {"music": None}, format="json")
    assert quoted.json()["characters"] == len(CORAL)


def test_the_database_lost_at_the_fenced_write_reads_no_line_twice(ad, speaking, media):
    from renders.making import TryAgain, render_attempt
    from renders.services import versions_of
    from tests.renders.test_lifecycle import database_down_for, fenced_write

    render = Render.objects.create(ad=ad, **versions_of(ad))  # its task not sent

    with database_down_for(fenced_write, times=1), pytest.raises(TryAgain) as again:
        render_attempt(render.pk)
    made = render_attempt(render.pk, holder=again.value.holder)  # the task's next attempt

    assert made.status == "done"
    assert speaking.count == 1  # the line read before the outage came from the cache after
    reader = next(s for s in made.timeline["segments"] if s["ref"] == "track-0")
    assert reader["readBy"] == "OpenAI (cached)"
    assert made.speech_characters == 0  # billed once, by the attempt that lost the database


def test_lines_kept_in_the_bucket_are_every_hosts_cache(
    ad, user, speaking, s3_server, settings, tmp_path
):
    from tests.renders.test_s3 import s3_storage

    name = s3_server.bucket()
    settings.MEDIA_ROOT = tmp_path / "local-disk"
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage(s3_server.url, name)}
    api = api_for(user)

    first = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    # Another host (its own storage client, nothing on its disk) renders the other mix.
    settings.STORAGES = {**settings.STORAGES, "default": s3_storage(s3_server.url, name)}
    again = api.post(f"/api/ads/{ad.pk}/renders", {"music": None}, format="json").json()

    assert api.get(f"/api/renders/{first['id']}").json()["status"] == "done"
    body = api.get(f"/api/renders/{again['id']}").json()
    assert body["status"] == "done", body
    assert speaking.count == 1
    assert body["timeline"]["speech"]["cachedLines"] == 1
    [kept] = [key for key in s3_server.keys(name) if key.startswith("speech/")]
    assert kept.endswith(".pcm")
    assert not (tmp_path / "local-disk").exists()  # nothing on this host's disk


def test_a_viewer_may_not_have_lines_read_at_a_cost_but_may_hear_what_costs_nothing(
    ad, speaking, django_user_model
):
    from workspaces.models import Membership
    from workspaces.roles import MemberRole

    viewer = django_user_model.objects.create_user("vera")
    reviewer = django_user_model.objects.create_user("rex")
    Membership.objects.create(workspace=ad.workspace, user=viewer, role=MemberRole.VIEWER)
    Membership.objects.create(workspace=ad.workspace, user=reviewer, role=MemberRole.REVIEWER)

    refused = api_for(viewer).post(f"/api/ads/{ad.pk}/renders", {}, format="json")

    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "not_allowed"
    assert (
        "speech and music providers (billed) is not allowed" in refused.json()["error"]["message"]
    )
    assert Render.objects.count() == 0 and speaking.count == 0
    made = api_for(reviewer).post(f"/api/ads/{ad.pk}/renders", {}, format="json")
    assert made.status_code == 202 and speaking.count == 1
    # The same lines again, now cached: nothing to bill, so the viewer may.
    cached = api_for(viewer).post(f"/api/ads/{ad.pk}/renders", {"music": None}, format="json")
    assert cached.status_code == 202 and speaking.count == 1
