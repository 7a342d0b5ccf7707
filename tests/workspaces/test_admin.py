"""The admin follows the role table: staff see only their workspaces, Reviewers view and
activate and nothing else, and actions that change what the model does need their own
permissions."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils import timezone

from conversations.models import Conversation, Run, RunStatus
from drafts.models import Ad, DraftStatus
from drafts.reviewers import REVIEWERS
from drafts.services import draft_create
from tests.support.versions import music
from voices.models import Voice
from workspaces.models import Membership
from workspaces.roles import MemberRole
from workspaces.services import workspace_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def reviewer(django_user_model):
    """Staff in the Reviewers group, a reviewer of workspace A only."""
    user = django_user_model.objects.create_user(username="rita", password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=REVIEWERS))
    return user


@pytest.fixture
def two_workspaces(user, other_user, reviewer):
    a = workspace_create(name="Workspace A", by=user)
    b = workspace_create(name="Workspace B", by=other_user)
    Membership.objects.create(workspace=a, user=reviewer, role=MemberRole.REVIEWER)
    brief = {"client": "Spotify", "language": "th", "duration_s": 30}
    ad_a = Ad.objects.create(workspace=a, owner=user, title="Ad of A", **brief)
    ad_b = Ad.objects.create(workspace=b, owner=other_user, title="Ad of B", **brief)
    runs = {}
    for ad in (ad_a, ad_b):
        draft_create(ad=ad, version=music(f"{ad.title} music"))
        conversation = Conversation.objects.create(ad=ad)
        runs[ad.title] = Run.objects.create(
            conversation=conversation,
            input_text="hi",
            status=RunStatus.FAILED,
            finished_at=timezone.now(),
        )
    return ad_a, ad_b, runs


@pytest.mark.parametrize(
    "changelist",
    [
        "drafts_ad",
        "drafts_draft",
        "drafts_activation",
        "conversations_conversation",
        "conversations_run",
        "workspaces_workspace",
    ],
)
def test_a_reviewer_sees_nothing_of_another_workspace(client, reviewer, two_workspaces, changelist):
    client.force_login(reviewer)

    page = client.get(reverse(f"admin:{changelist}_changelist"))
    searched = client.get(reverse(f"admin:{changelist}_changelist"), {"q": "Ad of"})

    assert page.status_code == 200
    assert "of B" not in page.content.decode() and "Workspace B" not in page.content.decode()
    assert "of B" not in searched.content.decode()


def test_a_reviewer_cannot_open_another_workspaces_ad_or_draft(client, reviewer, two_workspaces):
    _, ad_b, _ = two_workspaces
    client.force_login(reviewer)

    page = client.get(reverse("admin:drafts_ad_change", args=[ad_b.pk]), follow=True)
    activate = client.post(
        reverse("admin:drafts_draft_activate", args=[ad_b.drafts.get().pk]), {"next": "/admin/"}
    )

    assert "of B" not in page.content.decode().split("<h1>")[-1][:200]
    assert activate.status_code == 404
    assert ad_b.drafts.get().status == DraftStatus.DRAFT


def test_a_reviewer_activates_in_their_own_workspace(client, reviewer, two_workspaces):
    ad_a, _, _ = two_workspaces
    draft = ad_a.drafts.get()
    client.force_login(reviewer)

    response = client.post(
        reverse("admin:drafts_draft_activate", args=[draft.pk]), {"next": "/admin/"}
    )

    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.status == DraftStatus.ACTIVE
    assert draft.activations.get().user == reviewer


def test_a_reviewer_can_neither_unapprove_voices_nor_requeue_runs(client, reviewer, two_workspaces):
    voice = Voice.objects.create(
        provider="p",
        provider_voice_id="v",
        name="Araya",
        language="th",
        gender="female",
        approved=True,
    )
    _, _, runs = two_workspaces
    client.force_login(reviewer)

    client.post(
        reverse("admin:voices_voice_changelist"),
        {"action": "unapprove", "_selected_action": [voice.pk]},
    )
    client.post(
        reverse("admin:conversations_run_changelist"),
        {"action": "requeue", "_selected_action": [runs["Ad of A"].pk]},
    )
    form = client.get(reverse("admin:conversations_run_changelist")).context["action_form"]
    offered = {value for value, _ in form.fields["action"].choices} if form else set()

    voice.refresh_from_db()
    assert voice.approved
    assert Run.objects.get(pk=runs["Ad of A"].pk).status == RunStatus.FAILED
    assert "requeue" not in offered


def test_staff_with_every_model_permission_see_no_workspace_they_are_not_in(
    client, django_user_model, two_workspaces
):
    from django.contrib.auth.models import Permission

    staff = django_user_model.objects.create_user(username="sam", password="pw", is_staff=True)
    staff.user_permissions.set(Permission.objects.all())
    client.force_login(staff)

    page = client.get(reverse("admin:drafts_ad_changelist")).content.decode()
    stats = client.get(reverse("admin:agent-stats"))

    assert "Ad of A" not in page and "Ad of B" not in page
    assert stats.status_code == 200  # granted the statistics' permission explicitly
