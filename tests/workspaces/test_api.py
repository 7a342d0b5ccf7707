"""Workspaces over the API: teams that share ads, members managed by admins, ads archived
rather than deleted, and superusers' writes on the record."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from conversations.models import Conversation, Run
from drafts.models import Activation, Ad, Draft
from drafts.services import draft_activate, draft_create
from testbed.fake_openai import turn
from tests.support.versions import music
from workspaces.models import AuditEntry, Membership, Workspace
from workspaces.roles import MemberRole
from workspaces.services import workspace_create, workspace_personal

pytestmark = pytest.mark.django_db

BRIEF = {"clientDescription": "Spotify Premium family plan", "language": "th"}


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def team(user, other_user) -> Workspace:
    """alice's team, where bob is an editor."""
    workspace = workspace_create(name="Agency / Spotify", by=user)
    Membership.objects.create(workspace=workspace, user=other_user, role=MemberRole.EDITOR)
    return workspace


def test_a_new_user_gets_a_personal_workspace_on_first_use(user, other_user):
    listed = api_for(other_user).get("/api/workspaces/").json()["results"]
    assert [(w["name"], w["myRole"]) for w in listed] == [("bob's workspace", "admin")]

    response = api_for(user).post("/api/ads/", BRIEF, format="json")

    assert response.status_code == 201, response.json()
    personal = Workspace.objects.get(personal_for=user)
    assert response.json()["workspaceId"] == str(personal.pk)
    assert Membership.objects.get(workspace=personal).role == MemberRole.ADMIN
    workspaces = api_for(user).get("/api/workspaces/").json()["results"]
    assert [(w["name"], w["personal"], w["myRole"]) for w in workspaces] == [
        ("alice's workspace", True, "admin")
    ]


def test_ones_personal_workspace_is_made_once_and_read_in_one_statement(
    user, other_user, django_assert_num_queries
):
    made = workspace_personal(user=user)
    workspace_create(name="Agency / Spotify", by=user)  # a team of alice's is not it
    workspace_personal(user=other_user)

    with django_assert_num_queries(1):
        again = workspace_personal(user=user)

    assert again == made and again.personal_for_id == user.pk
    assert (again.name, again.created_at) == ("alice's workspace", made.created_at)
    assert Workspace.objects.filter(personal_for=user).count() == 1


def test_a_colleague_sees_and_works_on_the_teams_ads(user, other_user, team):
    created = (
        api_for(user).post("/api/ads/", {**BRIEF, "workspace": str(team.pk)}, format="json").json()
    )

    bob = api_for(other_user)
    listed = bob.get(f"/api/ads/?workspace={team.pk}").json()["results"]
    assert [ad["id"] for ad in listed] == [created["id"]]
    patched = bob.patch(f"/api/ads/{created['id']}/", {"title": "Family plan"}, format="json")
    assert patched.status_code == 200 and patched.json()["title"] == "Family plan"
    chat = bob.post(f"/api/ads/{created['id']}/chat", {"message": "Make it upbeat"}, format="json")
    assert chat.status_code in (200, 202), chat.json()
    assert Run.objects.get().requested_by == other_user


def test_members_are_managed_by_admins_and_the_last_admin_stays(
    user, other_user, team, django_user_model
):
    carol = django_user_model.objects.create_user(username="carol")
    alice, bob = api_for(user), api_for(other_user)
    members = f"/api/workspaces/{team.pk}/members/"

    assert bob.get(members).status_code == 403  # an editor manages nobody
    invited = alice.post(members, {"username": "carol", "role": "viewer"}, format="json")
    assert invited.status_code == 202, invited.json()
    accepted = api_for(carol).post(f"/api/invitations/{invited.json()['id']}/accept")
    assert accepted.status_code == 200, accepted.json()
    again = alice.post(members, {"username": "carol", "role": "editor"}, format="json")
    assert again.status_code == 400 and "member already" in again.json()["error"]["message"]

    demoted = alice.patch(f"{members}{user.pk}/", {"role": "editor"}, format="json")
    assert demoted.status_code == 409
    assert demoted.json()["error"]["code"] == "last_admin"
    assert alice.delete(f"{members}{user.pk}/").status_code == 409
    assert Membership.objects.get(workspace=team, user=user).role == MemberRole.ADMIN

    assert alice.patch(f"{members}{carol.pk}/", {"role": "admin"}, format="json").status_code == 200
    assert alice.delete(f"{members}{user.pk}/").status_code == 204
    assert set(Membership.objects.filter(workspace=team).values_list("user__username", "role")) == {
        ("bob", "editor"),
        ("carol", "admin"),
    }
    changes = list(AuditEntry.objects.filter(workspace=team).values_list("detail", flat=True))
    assert [change["change"] for change in reversed(changes)] == [
        "invited",
        "accepted",
        "role",
        "removed",
    ]


def test_deleting_an_ad_archives_it_and_keeps_its_records(user, make_ad):
    ad = make_ad()
    draft, _ = draft_create(ad=ad, version=music("warm pop"))
    draft_activate(ad=ad, draft_id=draft.pk, by=user)
    Run.objects.create(conversation=Conversation.objects.create(ad=ad), input_text="hi")
    alice = api_for(user)

    assert alice.delete(f"/api/ads/{ad.pk}/").status_code == 204

    ad.refresh_from_db()
    assert ad.archived_at is not None
    assert (Draft.objects.count(), Activation.objects.count(), Run.objects.count()) == (1, 1, 1)
    assert alice.get("/api/ads/").json()["count"] == 0
    assert [a["id"] for a in alice.get("/api/ads/?archived=only").json()["results"]] == [str(ad.pk)]
    assert alice.get(f"/api/ads/{ad.pk}/").json()["archivedAt"] is not None
    for refused in (
        alice.patch(f"/api/ads/{ad.pk}/", {"title": "x"}, format="json"),
        alice.post(f"/api/ads/{ad.pk}/chat", {"message": "again"}, format="json"),
        alice.post(f"/api/drafts/{draft.pk}/activate"),
    ):
        assert refused.status_code == 409, refused.json()
        assert refused.json()["error"]["code"] == "archived"
    assert Run.objects.count() == 1 and Ad.objects.get().title == ad.title
    assert AuditEntry.objects.get().action == "archive_ad"


def test_an_ad_moves_between_workspaces_its_user_administers(user, other_user, team, make_ad):
    ad = make_ad()
    alice = api_for(user)

    moved = alice.post(f"/api/ads/{ad.pk}/move/", {"workspace": str(team.pk)}, format="json")

    assert moved.status_code == 200, moved.json()
    assert Ad.objects.get().workspace == team
    assert api_for(other_user).get(f"/api/ads/{ad.pk}/").status_code == 200
    bobs_own = workspace_personal(user=other_user)
    refused = api_for(other_user).post(
        f"/api/ads/{ad.pk}/move/", {"workspace": str(bobs_own.pk)}, format="json"
    )
    assert refused.status_code == 403  # an editor of the team moves nothing out of it
    elsewhere = alice.post(
        f"/api/ads/{ad.pk}/move/", {"workspace": str(bobs_own.pk)}, format="json"
    )
    assert elsewhere.status_code == 404  # not a workspace of alice's: not hers to see
    assert Ad.objects.get().workspace == team


def test_a_superusers_write_outside_their_workspaces_is_on_the_record(user, staff_user, make_ad):
    ad = make_ad()
    draft, _ = draft_create(ad=ad, version=music("warm pop"))
    root = api_for(staff_user)  # a superuser, and no member of alice's workspace

    assert root.patch(f"/api/ads/{ad.pk}/", {"title": "Fixed"}, format="json").status_code == 200
    assert root.post(f"/api/drafts/{draft.pk}/activate").status_code == 200

    created = root.post("/api/ads/", {**BRIEF, "workspace": str(ad.workspace_id)}, format="json")
    assert created.status_code == 201, created.json()

    audit = AuditEntry.objects.order_by("created_at", "id")
    assert [(a.user, a.action, a.as_superuser, a.workspace_id) for a in audit] == [
        (staff_user, "edit_ad", True, ad.workspace_id),
        (staff_user, "create_ad", True, ad.workspace_id),
    ]
    activation = Activation.objects.get()
    assert (activation.user, activation.as_superuser) == (staff_user, True)
    draft_activate(ad=ad, draft_id=draft_create(ad=ad, version=music("x"))[0].pk, by=user)
    assert not Activation.objects.filter(user=user).get().as_superuser


@pytest.mark.django_db(transaction=True)
def test_the_database_keeps_a_workspace_admin_however_the_change_is_made(user, other_user):
    from django.db import IntegrityError, transaction

    team = workspace_create(name="Agency", by=user)
    Membership.objects.create(workspace=team, user=other_user, role=MemberRole.EDITOR)

    for change in (
        lambda: Membership.objects.filter(workspace=team, user=user).delete(),
        lambda: Membership.objects.filter(workspace=team, user=user).update(role=MemberRole.VIEWER),
        lambda: type(user).objects.filter(pk=user.pk).delete(),
    ):
        with pytest.raises(IntegrityError, match="would have no admin"), transaction.atomic():
            change()
    assert Membership.objects.get(workspace=team, user=user).role == MemberRole.ADMIN

    Membership.objects.filter(workspace=team, user=other_user).update(role=MemberRole.ADMIN)
    Membership.objects.filter(workspace=team, user=user).delete()  # another admin stays
    assert list(Membership.objects.filter(workspace=team).values_list("role", flat=True)) == [
        "admin"
    ]


@pytest.mark.django_db(transaction=True)
def test_a_superusers_chat_is_on_the_record_once_however_often_it_is_retried(
    staff_user, make_ad, fake_providers
):
    ad = make_ad()
    root = api_for(staff_user)  # a superuser, and no member of the ad's workspace
    fake_providers.script(turn("Noted."))
    url = f"/api/ads/{ad.pk}/chat"

    for _ in range(3):  # the same message, retried with its key
        sent = root.post(url, {"message": "Shorter"}, format="json", HTTP_IDEMPOTENCY_KEY="k-1")
        assert sent.status_code in (200, 202), sent.json()

    audit = AuditEntry.objects.filter(action="chat")
    assert [(a.user, a.as_superuser, a.workspace_id) for a in audit] == [
        (staff_user, True, ad.workspace_id)
    ]
