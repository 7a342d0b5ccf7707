"""Ads, drafts, state and activation over the REST API."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from drafts.models import Ad, Draft
from drafts.services import draft_activate, draft_create
from tests.support.api import api_for
from tests.support.versions import music, version_of

pytestmark = pytest.mark.django_db

BRIEF = {
    "clientDescription": "Spotify Premium family plan",
    "targetAudience": "Thai families",
    "durationSeconds": 30,
    "market": "TH",
    "language": "Thai",
}


@pytest.fixture
def api(user):
    return api_for(user)


def test_create_ad_normalises_the_language_and_returns_the_brief(api, user):
    response = api.post("/api/ads/", BRIEF, format="json")

    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["brief"]["language"] == "th"
    assert body["brief"]["durationSeconds"] == 30
    assert body["title"] == "Spotify Premium family plan"
    assert Ad.objects.get(pk=body["id"]).owner == user


def test_duration_can_come_from_the_format_text(api):
    brief = {k: v for k, v in BRIEF.items() if k != "durationSeconds"}
    response = api.post("/api/ads/", {**brief, "format": "15s audio ad"}, format="json")
    assert response.status_code == 201
    assert response.json()["brief"]["durationSeconds"] == 15


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"language": "klingon"}, "language", "Unknown language 'klingon'"),
        ({"language": None}, "language", "may not be null"),
        ({"durationSeconds": -5}, "durationSeconds", "greater than or equal to 5"),
        ({"durationSeconds": 600}, "durationSeconds", "less than or equal to 120"),
        ({"clientDescription": ""}, "clientDescription", "may not be blank"),
    ],
)
def test_invalid_brief_is_a_400_naming_the_field(api, change, field, message):
    response = api.post("/api/ads/", {**BRIEF, **change}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert field in error["fields"]
    assert message in error["fields"][field][0]
    assert not Ad.objects.exists()


def test_bad_json_is_a_400_not_a_500(api):
    for body in (b"{not json", b"\xff\xfe\x00", b"[" * 100_000 + b"]" * 100_000, b"NaN"):
        response = api.generic("POST", "/api/ads/", body, content_type="application/json")
        assert response.status_code in (400, 413), body[:10]
        assert response.json()["error"]["code"] in ("parse_error", "payload_too_large")


def test_oversized_body_is_a_413(api, settings):
    settings.ADSTUDIO_MAX_BODY_BYTES = 2048
    response = api.post("/api/ads/", {**BRIEF, "additionalContext": "x" * 4000}, format="json")
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


def test_wrong_content_type_is_a_415(api):
    response = api.generic("POST", "/api/ads/", "a=b", content_type="text/plain")
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


def test_list_update_and_delete_are_owner_scoped(api, user, other_user, make_ad):
    mine = make_ad()
    theirs = make_ad(owner=other_user, title="Theirs")
    other = api_for(other_user)

    listed = api.get("/api/ads/").json()
    assert [ad["id"] for ad in listed["results"]] == [str(mine.pk)]

    for method, data in (("get", None), ("patch", {"market": "US"}), ("delete", None)):
        response = getattr(api, method)(f"/api/ads/{theirs.pk}/", data, format="json")
        assert response.status_code == 404, method
        assert response.json()["error"]["code"] == "not_found"

    patched = api.patch(f"/api/ads/{mine.pk}/", {"market": "US"}, format="json")
    assert patched.status_code == 200
    assert patched.json()["brief"]["market"] == "US"
    assert other.delete(f"/api/ads/{mine.pk}/").status_code == 404
    assert api.delete(f"/api/ads/{mine.pk}/").status_code == 204
    assert Ad.objects.filter(pk=theirs.pk).exists()


def test_put_replaces_the_brief_and_names_a_missing_field(api, other_user, make_ad):
    mine = make_ad()
    theirs = make_ad(owner=other_user)
    replacement = {**BRIEF, "clientDescription": "Spotify Duo", "market": "SG"}

    replaced = api.put(f"/api/ads/{mine.pk}/", replacement)
    incomplete = api.put(f"/api/ads/{mine.pk}/", {"market": "US"})
    not_mine = api.put(f"/api/ads/{theirs.pk}/", replacement)

    assert replaced.status_code == 200
    assert replaced.json()["brief"]["clientDescription"] == "Spotify Duo"
    assert replaced.json()["brief"]["market"] == "SG"
    assert incomplete.status_code == 400
    assert "clientDescription" in incomplete.json()["error"]["fields"]
    assert not_mine.status_code == 404
    mine.refresh_from_db()
    theirs.refresh_from_db()
    assert (mine.client, mine.market) == ("Spotify Duo", "SG")  # the 400 changed nothing
    assert theirs.client == "Spotify Premium family plan"


def test_session_authentication_needs_the_csrf_token_to_write(user):
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user)
    secret = "a" * 32  # the csrftoken cookie's value, sent back in the header

    listed = browser.get("/api/ads/")
    refused = browser.post("/api/ads/", BRIEF)
    browser.cookies["csrftoken"] = secret
    created = browser.post("/api/ads/", BRIEF, HTTP_X_CSRFTOKEN=secret)

    assert listed.status_code == 200
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]["message"]
    assert created.status_code == 201, created.json()
    assert Ad.objects.count() == 1


def test_staff_see_every_ad(staff_user, make_ad):
    make_ad()
    assert api_for(staff_user).get("/api/ads/").json()["count"] == 1


@pytest.mark.parametrize("path", ["/api/ads/", "/api/voices/?language=th"])
def test_anonymous_requests_are_401(path):
    response = APIClient().get(path)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"


def test_drafts_listing_filters_and_validates(api, ad):
    for kind in ("music", "music", "sfx"):
        draft_create(ad=ad, version=version_of(kind))

    all_drafts = api.get(f"/api/ads/{ad.pk}/drafts/").json()["results"]
    music = api.get(f"/api/ads/{ad.pk}/drafts/?kind=music").json()["results"]
    bad = api.get(f"/api/ads/{ad.pk}/drafts/?status=live")

    assert [(d["kind"], d["version"]) for d in all_drafts] == [
        ("music", "v2"),
        ("music", "v1"),
        ("sfx", "v1"),
    ]
    assert [d["version"] for d in music] == ["v2", "v1"]
    assert music[0]["parentVersion"] == "v1"
    assert bad.status_code == 400 and "status" in bad.json()["error"]["fields"]


def test_a_draft_is_served_with_its_payload_in_the_designs_shape(api, ad):
    draft, _ = draft_create(ad=ad, version=version_of("voices"))

    body = api.get(f"/api/drafts/{draft.pk}/").json()

    assert body["kind"] == "voices" and body["version"] == "v1"
    assert body["payload"] == {
        "voiceTracks": [
            {
                "id": "track-0",
                "voiceId": "1",
                "voiceName": "Araya",
                "text": "Hello.",
                "playAfter": "start",
                "overlap": 0.0,
                "speed": 1.0,
            }
        ],
        "estimatedDurationS": 1.0,
    }
    assert body["summary"] == "Voices, about 1 s: 1 track read by Araya"


def test_activate_over_the_api_and_state_shows_it(api, ad):
    v1, _ = draft_create(ad=ad, version=music())
    v2, _ = draft_create(ad=ad, version=music())
    draft_activate(ad=ad, draft_id=v1.pk)

    response = api.post(f"/api/drafts/{v2.pk}/activate")
    again = api.post(f"/api/drafts/{v2.pk}/activate")
    state = api.get(f"/api/ads/{ad.pk}/state").json()

    assert response.status_code == 200
    assert response.json()["archivedVersions"] == ["v1"]
    assert response.json()["archivedVersion"] == "v1"  # the one that was live
    assert response.json()["draft"]["status"] == "active"
    assert again.json()["changed"] is False
    assert state["music"]["active"] == "v2" and state["music"]["latest"] == "v2"
    assert state["music"]["archived"] == ["v1"] and state["voices"]["archived"] == []
    assert Draft.objects.get(pk=v1.pk).status == "archived"
    recorded = ad.activations.first()
    assert (recorded.draft_id, recorded.replaced_id) == (v2.pk, v1.pk)
    assert (recorded.user, recorded.source) == (ad.owner, "api")


def test_another_users_draft_is_404_and_stays_untouched(other_user, ad):
    draft, _ = draft_create(ad=ad, version=music())
    other = api_for(other_user)

    assert other.get(f"/api/drafts/{draft.pk}/").status_code == 404
    assert other.post(f"/api/drafts/{draft.pk}/activate").status_code == 404
    assert other.get(f"/api/ads/{ad.pk}/state").status_code == 404
    assert Draft.objects.get(pk=draft.pk).status == "draft"
