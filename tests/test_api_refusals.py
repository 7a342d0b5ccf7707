"""Every refusal the domain raises is a status its operation documents: each is provoked
over the API and looked up in the schema drf-spectacular generates in this process, with
its ``code`` in the status's description; and no refusal class is left undeclared."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.urls import get_resolver
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from adstudio.refusals import StateConflict
from drafts.services import ad_archive, draft_create
from tests.support.api import api_for
from tests.support.versions import version_of
from workspaces.services import workspace_personal

pytestmark = pytest.mark.django_db

UI_CHAT_MESSAGE = {"id": "m-1", "role": "user", "parts": [{"type": "text", "text": "Hello"}]}


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


@dataclass(frozen=True)
class Refused:
    """A request the API refuses: the operation (as the schema names its path) and what
    it answers with."""

    method: str
    path: str  # the schema's template
    url: str
    body: dict | None = None


def documented(schema: dict, refused: Refused) -> dict:
    return schema["paths"][refused.path][refused.method]["responses"]


def _archived(make_ad, user):
    ad = make_ad()
    ad_archive(ad=ad, by=user)
    return ad


def member_demoted(api: APIClient, user, make_ad) -> Refused:
    workspace = workspace_personal(user=user)
    return Refused(
        "patch",
        "/api/workspaces/{workspace_id}/members/{user_id}/",
        f"/api/workspaces/{workspace.pk}/members/{user.pk}/",
        {"role": "editor"},
    )


def member_removed(api: APIClient, user, make_ad) -> Refused:
    workspace = workspace_personal(user=user)
    return Refused(
        "delete",
        "/api/workspaces/{workspace_id}/members/{user_id}/",
        f"/api/workspaces/{workspace.pk}/members/{user.pk}/",
    )


def chat_on_archived(api: APIClient, user, make_ad) -> Refused:
    ad = _archived(make_ad, user)
    return Refused("post", "/api/ads/{ad_id}/chat", f"/api/ads/{ad.pk}/chat", {"message": "Hi"})


def generate_on_archived(api: APIClient, user, make_ad) -> Refused:
    ad = _archived(make_ad, user)
    return Refused("post", "/api/ai/generate", "/api/ai/generate", {"adId": str(ad.pk)})


def ui_chat_on_archived(api: APIClient, user, make_ad) -> Refused:
    ad = _archived(make_ad, user)
    body = {"id": str(ad.pk), "messages": [UI_CHAT_MESSAGE], "trigger": "submit-message"}
    return Refused("post", "/api/ads/{ad_id}/ui-chat", f"/api/ads/{ad.pk}/ui-chat", body)


def regenerate_nothing(api: APIClient, user, make_ad) -> Refused:
    ad = make_ad()
    body = {"id": str(ad.pk), "messages": [UI_CHAT_MESSAGE], "trigger": "regenerate-message"}
    return Refused("post", "/api/ads/{ad_id}/ui-chat", f"/api/ads/{ad.pk}/ui-chat", body)


def brief_of_archived(api: APIClient, user, make_ad) -> Refused:
    ad = _archived(make_ad, user)
    return Refused("patch", "/api/ads/{id}/", f"/api/ads/{ad.pk}/", {"market": "US"})


def move_of_archived(api: APIClient, user, make_ad) -> Refused:
    ad = _archived(make_ad, user)
    team = api.post("/api/workspaces/", {"name": "Team"}, format="json").json()["id"]
    return Refused("post", "/api/ads/{id}/move/", f"/api/ads/{ad.pk}/move/", {"workspace": team})


def activate_on_archived(api: APIClient, user, make_ad) -> Refused:
    ad = make_ad()
    draft, _ = draft_create(ad=ad, version=version_of("music"))
    ad_archive(ad=ad, by=user)
    return Refused("post", "/api/drafts/{id}/activate/", f"/api/drafts/{draft.pk}/activate/")


def render_of_no_such_version(api: APIClient, user, make_ad) -> Refused:
    ad = make_ad()
    draft_create(ad=ad, version=version_of("music"))
    body = {"music": "v7"}
    return Refused("post", "/api/ads/{ad_id}/renders", f"/api/ads/{ad.pk}/renders", body)


def render_of_nothing(api: APIClient, user, make_ad) -> Refused:
    ad = make_ad()
    return Refused("post", "/api/ads/{ad_id}/renders", f"/api/ads/{ad.pk}/renders", {})


CASES: dict[str, tuple[Callable[..., Refused], str]] = {
    "member PATCH, the last admin": (member_demoted, "last_admin"),
    "member DELETE, the last admin": (member_removed, "last_admin"),
    "chat, an archived ad": (chat_on_archived, "archived"),
    "generate, an archived ad": (generate_on_archived, "archived"),
    "ui-chat, an archived ad": (ui_chat_on_archived, "archived"),
    "ui-chat regenerate, no reply": (regenerate_nothing, "nothing_to_regenerate"),
    "brief, an archived ad": (brief_of_archived, "archived"),
    "move, an archived ad": (move_of_archived, "archived"),
    "activate, an archived ad": (activate_on_archived, "archived"),
    "renders, a version the ad lacks": (render_of_no_such_version, "no_such_version"),
    "renders, nothing to render": (render_of_nothing, "nothing_to_render"),
}


@pytest.mark.parametrize(("provoke", "code"), CASES.values(), ids=CASES.keys())
def test_each_refusal_answers_a_status_its_operation_documents(
    schema, user, make_ad, provoke, code
):
    api = api_for(user)
    refused = provoke(api, user, make_ad)

    response = getattr(api, refused.method)(refused.url, refused.body, format="json")

    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == code
    responses = documented(schema, refused)
    assert "409" in responses, f"{refused.method.upper()} {refused.path} documents no 409"
    assert f"`{code}`" in responses["409"]["description"]
    body = responses["409"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/Error"}


def _refusals(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _refusals(sub)
    return found


def _conflicts(operation: dict) -> str:
    return operation["responses"].get("409", {}).get("description", "")


def test_every_state_conflict_of_the_code_is_documented_by_an_operation(schema):
    """A new refusal (a ``StateConflict`` subclass, answered 409) that no operation
    declares with ``refusal_responses`` fails here."""
    assert get_resolver().url_patterns  # every view, and so every service it calls, imported
    codes = {refusal.code for refusal in _refusals(StateConflict)}
    documented_codes = {
        code
        for operations in schema["paths"].values()
        for operation in operations.values()
        for code in re.findall(r"`(\w+)`", _conflicts(operation))
    }
    assert codes >= {"archived", "last_admin", "no_such_version", "nothing_to_render"}
    assert codes <= documented_codes, f"undocumented: {sorted(codes - documented_codes)}"
