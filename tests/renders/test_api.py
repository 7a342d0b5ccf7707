"""Scratch tracks over the API: asked for (202), rendered by the task, read back with the
measured timeline; the same versions never rendered twice; any combination of versions;
the audio through an expiring link that only someone who may see the ad can use."""

from __future__ import annotations

import io

import pytest
import soundfile
from django.core import signing
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from drafts.services import draft_activate, draft_create
from providers.demo_lines import LINES
from renders.models import Render
from tests.support.versions import music, sfx, voices
from workspaces.models import Membership
from workspaces.roles import Role

pytestmark = pytest.mark.django_db(transaction=True)  # the task runs when the row commits


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"


def api_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def ad(make_ad):
    ad = make_ad(language="th", duration_s=15)
    thai = LINES["th"].calm
    draft_create(ad=ad, version=voices(thai[0], thai[1]))
    draft_create(ad=ad, version=voices(thai[2], thai[3], thai[4]))
    draft_create(ad=ad, version=music("warm pad at 90 bpm", duration=15))
    draft_create(ad=ad, version=sfx("chime"))
    return ad


def test_a_render_is_made_and_read_back_with_its_timeline(ad, user, tasks_executed):
    api = api_for(user)

    asked = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json")

    assert asked.status_code == 202
    body = api.get(f"/api/renders/{asked.json()['id']}").json()
    assert body["status"] == "done"
    assert body["versions"] == {"voices": "v2", "music": "v1", "sfx": "v1"}  # the latest
    kinds = [(s["kind"], s["ref"]) for s in body["timeline"]["segments"]]
    assert kinds == [
        ("voice", "track-0"),
        ("voice", "track-1"),
        ("voice", "track-2"),
        ("music", "music"),
        ("sfx", "sfx-0"),
    ]
    assert body["timeline"]["slotS"] == 15 and body["seconds"] >= 15
    assert body["loudnessLufs"] == pytest.approx(-16, abs=0.2)
    audio = api.get(body["audioUrl"])  # the link alone opens it: an <audio> element's way
    assert audio.status_code == 200 and audio["Content-Type"] == "audio/ogg"
    samples, rate = soundfile.read(io.BytesIO(b"".join(audio.streaming_content)))
    assert rate == 48_000 and abs(len(samples) / rate - body["seconds"]) < 0.05
    wav = APIClient().get(body["wavUrl"])
    assert wav.status_code == 200 and wav["Content-Type"] == "audio/wav"


def test_the_same_versions_are_rendered_once(ad, user, tasks_executed):
    api = api_for(user)
    first = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    again = api.post(
        f"/api/ads/{ad.pk}/renders", {"voices": "v2", "music": "v1", "sfx": "v1"}, format="json"
    ).json()
    other = api.post(
        f"/api/ads/{ad.pk}/renders", {"voices": "v1", "sfx": None}, format="json"
    ).json()

    assert again["id"] == first["id"] and again["status"] == "done"
    assert other["id"] != first["id"] and other["versions"] == {
        "voices": "v1",
        "music": "v1",
        "sfx": None,
    }
    assert Render.objects.count() == 2
    assert [task for task in tasks_executed if task == "renders.tasks.render_scratch_track"] == [
        "renders.tasks.render_scratch_track"
    ] * 2


def test_the_active_versions_and_a_missing_version(ad, user, tasks_executed):
    api = api_for(user)
    v1 = ad.drafts.get(kind="voices", version=1)
    draft_activate(ad=ad, draft_id=v1.pk, by=user)

    active = api.post(f"/api/ads/{ad.pk}/renders", {"of": "active"}, format="json").json()
    missing = api.post(f"/api/ads/{ad.pk}/renders", {"music": "v9"}, format="json")
    wrong = api.post(f"/api/ads/{ad.pk}/renders", {"music": "9"}, format="json")

    assert active["versions"] == {"voices": "v1", "music": None, "sfx": None}
    assert missing.status_code == 409
    assert missing.json()["error"] == {
        "code": "no_such_version",
        "message": "The ad has no music v9.",
    }
    assert wrong.status_code == 400 and "music" in wrong.json()["error"]["fields"]


def test_another_users_render_and_audio_are_not_found(ad, user, other_user, tasks_executed):
    body = api_for(user).post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    body = api_for(user).get(f"/api/renders/{body['id']}").json()
    outsider = api_for(other_user)

    assert outsider.post(f"/api/ads/{ad.pk}/renders", {}, format="json").status_code == 404
    assert outsider.get(f"/api/renders/{body['id']}").status_code == 404
    # Their own link, or a token for them, to the render: refused alike.
    token = signing.dumps(
        {"render": body["id"], "user": other_user.pk, "format": "ogg"},
        salt="renders.audio",
        compress=True,
    )
    assert APIClient().get(f"/api/renders/{body['id']}/audio?token={token}").status_code == 404
    assert APIClient().get(f"/api/renders/{body['id']}/audio?token=forged").status_code == 404
    # The owner's link stops working when they may no longer see the ad.
    assert APIClient().get(body["audioUrl"]).status_code == 200
    Membership.objects.filter(user=user, workspace=ad.workspace).delete()
    assert APIClient().get(body["audioUrl"]).status_code == 404


def test_a_link_expires(ad, user, settings, tasks_executed, monkeypatch):
    body = api_for(user).post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    url = api_for(user).get(f"/api/renders/{body['id']}").json()["audioUrl"]
    settings.ADSTUDIO_RENDER_LINK_SECONDS = 10
    import time

    later = time.time() + 11
    monkeypatch.setattr("django.core.signing.time.time", lambda: later)
    assert APIClient().get(url).status_code == 404


def test_a_viewer_may_hear_the_ad(ad, user, other_user, tasks_executed):
    Membership.objects.create(workspace=ad.workspace, user=other_user, role=Role.VIEWER)
    body = api_for(other_user).post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    body = api_for(other_user).get(f"/api/renders/{body['id']}").json()
    assert body["status"] == "done" and APIClient().get(body["audioUrl"]).status_code == 200


def test_a_render_whose_task_died_is_made_again_when_asked(ad, user, settings, tasks_executed):
    """A worker killed mid-render leaves it ``rendering``; once that is older than
    ADSTUDIO_RENDER_STALE_AFTER, asking again queues it again (and only then)."""
    from datetime import timedelta

    from django.utils import timezone

    from renders.services import versions_of

    stuck = Render.objects.create(
        ad=ad, status="rendering", started_at=timezone.now(), **versions_of(ad)
    )
    api = api_for(user)

    assert api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()["status"] == "rendering"
    Render.objects.filter(pk=stuck.pk).update(
        started_at=timezone.now() - timedelta(seconds=settings.ADSTUDIO_RENDER_STALE_AFTER + 1)
    )
    again = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()

    assert again["id"] == str(stuck.pk) and again["status"] in ("queued", "done")
    assert api.get(f"/api/renders/{stuck.pk}").json()["status"] == "done"
    assert tasks_executed == ["renders.tasks.render_scratch_track"]
