"""GET /api/voices/ and /api/voices/{id}/: the search semantics over HTTP, for
authenticated users only, with validation errors that name the field."""

from __future__ import annotations

import pytest
from django.urls import include, path
from rest_framework.test import APIClient

from accounts.services import token_create

pytestmark = pytest.mark.django_db

LIST = "/api/voices/"


def detail(voice_id) -> str:
    return f"/api/voices/{voice_id}/"


@pytest.fixture
def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_anonymous_requests_are_refused(make_voice):
    voice = make_voice()
    client = APIClient()

    for url in (f"{LIST}?language=en", detail(voice.pk)):
        response = client.get(url)
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == "Token"


def test_token_and_session_authentication(user, make_voice, client):
    make_voice(name="Emma")
    _, token = token_create(user=user)
    by_token = APIClient()
    by_token.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    client.force_login(user)

    assert by_token.get(f"{LIST}?language=en").json()["results"][0]["name"] == "Emma"
    assert client.get(f"{LIST}?language=en").json()["results"][0]["name"] == "Emma"


def test_list_searches_like_the_tool(api, make_voice):
    match = make_voice(
        name="Somchai",
        language="th",
        locale="th-TH",
        gender="male",
        accent="central",
        style="warm",
        use_case="advertisement",
        description="A warm read.",
        preview_url="https://cdn.example.com/s.mp3",
    )
    make_voice(name="Malee", language="th", gender="female", style="warm")
    make_voice(name="Hidden", language="th", gender="male", style="warm", approved=False)
    make_voice(name="Gone", language="th", gender="male", style="warm", active=False)

    response = api.get(
        LIST, {"language": "Thai", "gender": "male", "accent": "Central", "style": "warm"}
    )

    assert response.status_code == 200
    assert response.json() == {
        "count": 1,
        "next": None,
        "previous": None,
        "results": [
            {
                "id": match.pk,
                "name": "Somchai",
                "provider": "test",
                "provider_voice_id": match.provider_voice_id,
                "language": "th",
                "locale": "th-TH",
                "accent": "central",
                "gender": "male",
                "age": "",
                "style": "warm",
                "use_case": "advertisement",
                "description": "A warm read.",
                "preview_url": "https://cdn.example.com/s.mp3",
                "approved": True,
                "active": True,
            }
        ],
    }


def test_list_ranks_exact_style_first(api, make_voice):
    make_voice(name="Aaron", description="warm")
    make_voice(name="Zed", style="warm")

    response = api.get(LIST, {"language": "en", "style": "warm"})

    assert [v["name"] for v in response.json()["results"]] == ["Zed", "Aaron"]


def test_count_is_the_page_size_clamped_to_50(api, make_voice):
    for number in range(55):
        make_voice(name=f"V{number:02d}")

    page1 = api.get(LIST, {"language": "en", "count": 2}).json()
    page2 = api.get(LIST, {"language": "en", "count": 2, "page": 2}).json()
    default = api.get(LIST, {"language": "en"}).json()
    too_many = api.get(LIST, {"language": "en", "count": 500}).json()
    too_few = api.get(LIST, {"language": "en", "count": 0}).json()

    assert page1["count"] == 55
    assert [v["name"] for v in page1["results"]] == ["V00", "V01"]
    assert [v["name"] for v in page2["results"]] == ["V02", "V03"]
    assert "count=2" in page1["next"] and "page=2" in page1["next"]
    assert len(default["results"]) == 10
    assert len(too_many["results"]) == 50
    assert len(too_few["results"]) == 1


def test_no_match_is_an_empty_page(api, make_voice):
    make_voice(language="en")
    response = api.get(LIST, {"language": "th"})
    assert response.status_code == 200
    assert response.json()["results"] == []


@pytest.mark.parametrize(
    ("params", "errors"),
    [
        ({}, {"language": ["This field is required."]}),
        ({"language": ""}, {"language": ["This field may not be blank."]}),
        (
            {"language": "en", "gender": "robot"},
            {"gender": ["Unknown gender 'robot': use one of male, female, neutral."]},
        ),
        (
            {"language": "portugese"},
            {"language": ["Unknown language 'portugese'. Did you mean: pt (Portuguese)?"]},
        ),
        ({"language": "en", "count": "lots"}, {"count": ["A valid integer is required."]}),
        # As the schema says: no value that is not one of its choices, no number given
        # empty or twice (DRF would take an empty one as not given, and the last of two).
        ({"language": "en", "gender": ""}, {"gender": ["This field may not be blank."]}),
        ({"language": "en", "count": ""}, {"count": ["This field is required."]}),
        ({"language": "en", "count": ["5", "lots"]}, {"count": ["Give this parameter once."]}),
    ],
)
def test_invalid_queries_are_400s_naming_the_field(api, params, errors):
    response = api.get(LIST, params)
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == errors  # the project's error envelope


def test_detail_of_an_approved_voice(api, make_voice):
    voice = make_voice(name="Emma")
    response = api.get(detail(voice.pk))
    assert response.status_code == 200
    assert response.json()["name"] == "Emma"


@pytest.mark.parametrize("state", [{"approved": False}, {"active": False}])
def test_unapproved_or_inactive_voice_is_404_except_for_staff(api, staff_user, make_voice, state):
    voice = make_voice(**state)
    staff = APIClient()
    staff.force_authenticate(staff_user)

    assert api.get(detail(voice.pk)).status_code == 404
    response = staff.get(detail(voice.pk))
    assert response.status_code == 200
    assert response.json()["id"] == voice.pk


@pytest.mark.parametrize("voice_id", ["999999", "abc"])
def test_detail_of_unknown_voice_is_404(api, voice_id):
    assert api.get(detail(voice_id)).status_code == 404


def test_the_api_is_read_only(api, make_voice):
    voice = make_voice()
    assert api.post(LIST, {"name": "x"}).status_code == 405
    assert api.delete(detail(voice.pk)).status_code == 405


def test_openapi_schema_documents_the_views_without_warnings():
    from drf_spectacular.drainage import GENERATOR_STATS
    from drf_spectacular.generators import SchemaGenerator

    GENERATOR_STATS.reset()
    generator = SchemaGenerator(patterns=[path("api/", include("voices.urls"))])
    schema = generator.get_schema(request=None, public=True)

    assert not GENERATOR_STATS._warn_cache, dict(GENERATOR_STATS._warn_cache)
    assert not GENERATOR_STATS._error_cache, dict(GENERATOR_STATS._error_cache)
    parameters = {p["name"]: p for p in schema["paths"]["/api/voices/"]["get"]["parameters"]}
    assert parameters["language"]["required"] is True
    assert parameters["gender"]["schema"] == {
        "type": "string",
        "enum": ["female", "male", "neutral"],
    }
    assert parameters["count"]["schema"]["type"] == "integer"
    assert {"accent", "style", "page"} <= set(parameters)
    assert "400" in schema["paths"]["/api/voices/"]["get"]["responses"]
    assert "/api/voices/{id}/" in schema["paths"]


@pytest.mark.parametrize(
    "params",
    [
        {"language": "en", "accent": "brit\x00ish"},
        {"language": "en\x00"},
        {"language": "en", "style": "\x00warm"},
        {"language": "en", "gender": "\x00"},
        {"language": "en", "count": "99999999999999999999999"},
        {"language": "en", "page": "99999999999999999999999"},
    ],
)
def test_hostile_queries_never_cause_a_server_error(api, make_voice, params):
    make_voice()
    assert api.get(LIST, params).status_code < 500


def test_id_beyond_bigint_is_404(api):
    assert api.get(detail("9" * 30)).status_code == 404
