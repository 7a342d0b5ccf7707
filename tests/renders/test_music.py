"""Renders whose music the draft's provider composes (Mubert, over real HTTP against its
fake): the composed bed in the mix and said so, kept so a change of the voices composes
nothing again, and a provider that fails leaving the placeholder with a warning."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile

from drafts.services import draft_create
from providers.demo_lines import LINES
from renders.models import Render
from tests.support.api import api_for
from tests.support.versions import music, voices

pytestmark = pytest.mark.django_db(transaction=True)  # the task runs when the row commits


@pytest.fixture
def composing(settings, fake_mubert):
    entry = fake_mubert.settings()
    entry["mubert"]["poll_interval_s"] = "0.01"
    settings.ADSTUDIO_MUSIC_PROVIDERS = entry
    settings.ADSTUDIO_PROVIDER_RETRY = {"max_attempts": 2, "base_delay": 0.01, "jitter": 0}
    return fake_mubert


@pytest.fixture
def ad(make_ad):
    ad = make_ad(language="th", duration_s=10)
    draft_create(ad=ad, version=voices(LINES["th"].calm[0]))
    draft_create(ad=ad, version=voices(LINES["th"].calm[1]))
    draft_create(ad=ad, version=music("warm pad at 90 bpm", provider="mubert", duration=10))
    return ad


def music_of(body: dict) -> dict:
    return next(s for s in body["timeline"]["segments"] if s["kind"] == "music")


def test_the_music_the_provider_composed_is_in_the_mix_and_kept(ad, user, composing):
    api = api_for(user)

    first = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()
    # The voices changed, the music not: composed once.
    second = api.post(f"/api/ads/{ad.pk}/renders", {"voices": "v1"}, format="json").json()

    made = api.get(f"/api/renders/{first['id']}").json()
    again = api.get(f"/api/renders/{second['id']}").json()
    assert made["status"] == again["status"] == "done", (made, again)
    assert music_of(made)["madeBy"] == "Mubert"
    assert music_of(again)["madeBy"] == "Mubert (cached)"
    assert len(composing.creates) == 1
    asked = json.loads(composing.creates[0].body)
    assert (asked["prompt"], asked["duration"]) == ("warm pad at 90 bpm", 10)
    # The same music asked of a provider not connected: the placeholder's bed, another sound.
    draft_create(ad=ad, version=music("warm pad at 90 bpm", provider="loudly", duration=10))
    placeholder = api.post(f"/api/ads/{ad.pk}/renders", {"music": "v2"}, format="json").json()
    assert music_of(api.get(f"/api/renders/{placeholder['id']}").json())["madeBy"] == (
        "placeholder bed: Loudly not connected"
    )
    composed, padded = (music_stem(r["id"]) for r in (first, placeholder))
    assert len(composed) == len(padded) and np.abs(composed).max() > 0.01
    assert not np.allclose(composed, padded, atol=1e-3)


def music_stem(render_id: str) -> np.ndarray:
    with Render.objects.get(pk=render_id).music_stem.open("rb") as stem:
        samples, rate = soundfile.read(stem, dtype="float32")
    assert rate == 48_000
    return samples


def test_a_provider_that_fails_leaves_the_placeholder_and_a_warning(ad, user, composing):
    composing.fail(500, times=2)  # the create, on both attempts the policy allows
    api = api_for(user)

    made = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()

    body = api.get(f"/api/renders/{made['id']}").json()
    assert body["status"] == "done", body
    assert music_of(body)["madeBy"] == "placeholder bed: Mubert failed"
    assert any(
        w.startswith("music: the placeholder bed, Mubert failed (transient")
        for w in body["timeline"]["warnings"]
    ), body["timeline"]["warnings"]
    assert composing.access_token not in str(body)


def test_without_its_credentials_the_placeholder_says_so(ad, user, settings):
    settings.ADSTUDIO_MUSIC_PROVIDERS = {}
    api = api_for(user)

    made = api.post(f"/api/ads/{ad.pk}/renders", {}, format="json").json()

    body = api.get(f"/api/renders/{made['id']}").json()
    assert music_of(body)["madeBy"] == "placeholder bed: Mubert not configured"


def test_a_viewer_may_not_have_music_composed_but_may_hear_it_once_kept(
    ad, user, composing, django_user_model
):
    from workspaces.models import Membership
    from workspaces.roles import MemberRole

    viewer = django_user_model.objects.create_user("vera")
    Membership.objects.create(workspace=ad.workspace, user=viewer, role=MemberRole.VIEWER)
    quoted = api_for(viewer).post(f"/api/ads/{ad.pk}/renders?estimate=1", {}, format="json")
    assert quoted.json()["composesMusic"] is True

    refused = api_for(viewer).post(f"/api/ads/{ad.pk}/renders", {}, format="json")

    assert refused.status_code == 403 and len(composing.creates) == 0
    assert api_for(user).post(f"/api/ads/{ad.pk}/renders", {}, format="json").status_code == 202
    assert len(composing.creates) == 1
    kept = api_for(viewer).post(f"/api/ads/{ad.pk}/renders", {"voices": "v1"}, format="json")
    assert kept.status_code == 202 and len(composing.creates) == 1
