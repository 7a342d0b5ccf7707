"""Invitations instead of adding strangers: an admin invites by username or email, the
answer is the same whether the account exists, nothing of the invitee's changes until
they accept, an invitation expires, and every step is on the audit log."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from workspaces.admin import InvitationAdmin
from workspaces.models import AuditEntry, Invitation, Membership
from workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def team(user):
    return workspace_create(name="Agency / Spotify", by=user)


@pytest.fixture
def carol(django_user_model):
    return django_user_model.objects.create_user(
        username="carol", email="Carol@Example.com", password="pw-carol-123"
    )


def invite(admin, team, **body):
    return api_for(admin).post(
        f"/api/workspaces/{team.pk}/members/", {"role": "viewer", **body}, format="json"
    )


def workspace_ids(user) -> set[str]:
    return {w["id"] for w in api_for(user).get("/api/workspaces/").json()["results"]}


def test_the_answer_is_the_same_whether_the_account_exists(user, team, carol):
    known = invite(user, team, username="carol")
    unknown = invite(user, team, username="nobody-here")
    superuser = invite(user, team, username="root")  # whoever it is, nothing is told

    shapes = [r.json() for r in (known, unknown, superuser)]
    assert [r.status_code for r in (known, unknown, superuser)] == [202, 202, 202]
    assert {tuple(sorted(body)) for body in shapes} == {
        ("createdAt", "expiresAt", "id", "invitedBy", "invitee", "kind", "role", "status")
    }
    assert [(b["invitee"], b["status"], b["kind"]) for b in shapes] == [
        ("carol", "pending", "username"),
        ("nobody-here", "pending", "username"),
        ("root", "pending", "username"),
    ]
    # Nothing of carol's changed: no membership, the workspace is not in her list.
    assert not Membership.objects.filter(workspace=team, user=carol).exists()
    assert str(team.pk) not in workspace_ids(carol)


def test_accepting_joins_with_the_role_and_every_step_is_audited(user, team, carol):
    sent = invite(user, team, username="carol", role="editor").json()
    listed = api_for(carol).get("/api/invitations/").json()["results"]
    assert [(i["id"], i["workspaceName"], i["role"], i["invitedBy"]) for i in listed] == [
        (sent["id"], "Agency / Spotify", "editor", user.username)
    ]

    accepted = api_for(carol).post(f"/api/invitations/{sent['id']}/accept")

    assert accepted.status_code == 200
    assert accepted.json()["myRole"] == "editor"
    assert Membership.objects.get(workspace=team, user=carol).role == "editor"
    assert str(team.pk) in workspace_ids(carol)
    assert api_for(carol).get("/api/invitations/").json()["results"] == []
    changes = AuditEntry.objects.filter(workspace=team).order_by("created_at", "id")
    assert [(e.detail["change"], e.user_id) for e in changes] == [
        ("invited", user.pk),
        ("accepted", carol.pk),
    ]
    # Answered: accepting again finds nothing to accept.
    assert api_for(carol).post(f"/api/invitations/{sent['id']}/accept").status_code == 404


def test_declined_revoked_and_expired_invitations_cannot_be_accepted(user, team, carol):
    declined = invite(user, team, username="carol").json()
    assert api_for(carol).post(f"/api/invitations/{declined['id']}/decline").status_code == 204
    revoked = invite(user, team, username="carol").json()
    assert revoked["id"] != declined["id"]  # a new one after the answer
    url = f"/api/workspaces/{team.pk}/invitations/{revoked['id']}/"
    assert api_for(user).delete(url).status_code == 204
    expired = invite(user, team, email="carol@example.com").json()
    Invitation.objects.filter(pk=expired["id"]).update(expires_at=timezone.now())

    for invitation in (declined, revoked, expired):
        answer = api_for(carol).post(f"/api/invitations/{invitation['id']}/accept")
        assert answer.status_code == 404, invitation
    assert not Membership.objects.filter(workspace=team, user=carol).exists()
    sent = api_for(user).get(f"/api/workspaces/{team.pk}/invitations/").json()["results"]
    assert [i["status"] for i in sent] == ["pending", "revoked", "declined"]
    changes = [e.detail["change"] for e in AuditEntry.objects.filter(workspace=team)]
    assert sorted(changes) == ["declined", "invited", "invited", "invited", "revoked"]


def test_an_email_invitation_reaches_the_account_of_that_address(
    user, team, carol, django_user_model
):
    sent = invite(user, team, email="CAROL@example.com").json()
    later = invite(user, team, email="dave@example.com").json()
    assert sent["invitee"] == "carol@example.com"

    assert [i["id"] for i in api_for(carol).get("/api/invitations/").json()["results"]] == [
        sent["id"]
    ]
    # Someone who signs up with the address afterwards finds theirs.
    dave = django_user_model.objects.create_user(username="dave", email="dave@example.com")
    assert [i["id"] for i in api_for(dave).get("/api/invitations/").json()["results"]] == [
        later["id"]
    ]
    assert api_for(dave).post(f"/api/invitations/{later['id']}/accept").status_code == 200
    assert Membership.objects.get(workspace=team, user=dave).role == "viewer"


def test_another_persons_invitation_is_not_found(user, other_user, team, carol):
    sent = invite(user, team, username="carol").json()

    for path in ("accept", "decline"):
        answer = api_for(other_user).post(f"/api/invitations/{sent['id']}/{path}")
        assert answer.status_code == 404
    assert api_for(other_user).get("/api/invitations/").json()["results"] == []
    assert Invitation.objects.get(pk=sent["id"]).status == "pending"


def test_inviting_again_answers_the_open_invitation(user, team, carol):
    first = invite(user, team, username="carol", role="viewer").json()
    second = invite(user, team, username="carol", role="reviewer").json()

    assert second["id"] == first["id"] and second["role"] == "reviewer"
    assert Invitation.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "username"), ({"username": "carol", "email": "c@example.com"}, "username")],
)
def test_an_invitation_names_one_person(user, team, body, field):
    answer = invite(user, team, **body)
    assert answer.status_code == 400
    assert field in answer.json()["error"]["fields"]
    assert not Invitation.objects.exists()


def test_only_admins_invite_and_see_invitations(user, other_user, team):
    Membership.objects.create(workspace=team, user=other_user, role="editor")

    assert invite(other_user, team, username="carol").status_code == 403
    assert api_for(other_user).get(f"/api/workspaces/{team.pk}/invitations/").status_code == 403
    assert not Invitation.objects.exists()


def test_the_admin_lists_managed_and_received_invitations_only(
    user, other_user, team, carol, rf, django_user_model
):
    theirs = workspace_create(name="Someone else's", by=other_user)
    invite(user, team, username="nobody-here")
    invite(other_user, theirs, username="somebody")
    to_carol = invite(other_user, theirs, username="carol").json()
    carol.is_staff = True
    carol.save()

    request = rf.get("/admin/workspaces/invitation/")
    request.user = carol
    seen = InvitationAdmin(Invitation, None).get_queryset(request)
    assert [str(i.pk) for i in seen] == [to_carol["id"]]
    request.user = user
    seen = InvitationAdmin(Invitation, None).get_queryset(request)
    assert [i.identifier for i in seen] == ["nobody-here"]


def test_an_invitation_expires_after_the_configured_days(user, team, settings):
    settings.ADSTUDIO_INVITATION_DAYS = 2
    sent = invite(user, team, username="carol").json()
    invitation = Invitation.objects.get(pk=sent["id"])
    assert invitation.expires_at - invitation.created_at == pytest.approx(
        timedelta(days=2), abs=timedelta(seconds=5)
    )
