"""Every admin action of the product x kind of staff member -> whether it takes effect:
only with the action's own permission and, for what belongs to a workspace, a role there
that allows it (``workspaces.roles``). An action with no row fails
``test_every_admin_action_has_a_row``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.contrib import admin
from django.contrib.auth.models import Group, Permission
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone

from accounts.models import ApiToken
from accounts.services import token_create
from conversations.models import Conversation, Run, RunStatus
from drafts.models import Ad, Draft, DraftStatus
from drafts.reviewers import PRODUCT_APPS, REVIEWERS
from drafts.services import draft_create
from tests.support.versions import music
from voices.catalogue_managers import CATALOGUE_MANAGERS
from voices.models import Voice
from workspaces.invitations import invitation_send
from workspaces.models import Invitation, Membership, Workspace
from workspaces.roles import Action, MemberRole, allows

pytestmark = pytest.mark.django_db

# Staff members: which Django permissions they hold, and their role in the workspace.
STAFF: dict[str, tuple[str, MemberRole | None]] = {
    "reviewer": ("reviewers", MemberRole.REVIEWER),
    "viewer_in_reviewers": ("reviewers", MemberRole.VIEWER),  # may activate, but not here
    "reviewer_elsewhere": ("reviewers", None),
    "manager": ("every permission", MemberRole.ADMIN),
    "manager_elsewhere": ("every permission", None),
}


@dataclass(frozen=True)
class Row:
    model: str  # app_label.model_name
    action: str
    permission: str  # Django's permission the action needs
    role_action: Action | None  # what the role must allow; None: the global catalogue
    target: Callable[[dict], object]
    took_effect: Callable[[object], bool]


def _run_requeued(run: Run) -> bool:
    return Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


ROWS = [
    Row("drafts.draft", "activate", "drafts.activate_draft", Action.ACTIVATE,
        lambda w: w["draft"], lambda d: Draft.objects.get(pk=d.pk).status == DraftStatus.ACTIVE),
    Row("drafts.ad", "archive", "drafts.change_ad", Action.ARCHIVE_AD,
        lambda w: w["ad"], lambda ad: Ad.objects.get(pk=ad.pk).archived_at is not None),
    Row("conversations.run", "requeue", "conversations.requeue_run", Action.CHAT,
        lambda w: w["run"], _run_requeued),
    Row("voices.voice", "approve", "voices.approve_voice", None,
        lambda w: w["unapproved"], lambda v: Voice.objects.get(pk=v.pk).approved),
    Row("voices.voice", "unapprove", "voices.approve_voice", None,
        lambda w: w["approved"], lambda v: not Voice.objects.get(pk=v.pk).approved),
    Row("accounts.apitoken", "revoke", "accounts.change_apitoken", None,
        lambda w: w["token"], lambda t: ApiToken.objects.get(pk=t.pk).revoked_at is not None),
    Row("voices.voice", "delete_selected", "voices.delete_voice", None,
        lambda w: w["approved"], lambda v: not Voice.objects.filter(pk=v.pk).exists()),
    Row("workspaces.invitation", "revoke", "workspaces.change_invitation",
        Action.MANAGE_MEMBERS, lambda w: w["invitation"],
        lambda i: Invitation.objects.get(pk=i.pk).status == "revoked"),
]  # fmt: skip


@pytest.fixture
def world(django_user_model, user) -> dict:
    workspace = Workspace.objects.create(name="Agency")
    ad = Ad.objects.create(
        workspace=workspace, owner=user, title="Family plan", client="Spotify", language="th"
    )
    draft, _ = draft_create(ad=ad, version=music("warm pop"))
    run = Run.objects.create(
        conversation=Conversation.objects.create(ad=ad),
        input_text="hi",
        status=RunStatus.FAILED,
        finished_at=timezone.now(),
    )
    voices = {
        name: Voice.objects.create(
            provider="p", provider_voice_id=name, name=name, language="th", gender="female",
            approved=name == "approved",
        )
        for name in ("approved", "unapproved")
    }  # fmt: skip
    staff = {}
    for name, (permissions, role) in STAFF.items():
        member = django_user_model.objects.create_user(username=name, is_staff=True)
        if permissions == "reviewers":
            member.groups.add(Group.objects.get(name=REVIEWERS))
        else:
            member.user_permissions.set(Permission.objects.all())
        if role is not None:
            Membership.objects.create(workspace=workspace, user=member, role=role)
        staff[name] = member
    staff["superuser"] = django_user_model.objects.create_superuser(username="root")
    invitation = invitation_send(
        workspace=workspace, kind="username", identifier="newcomer", role=MemberRole.VIEWER, by=user
    )
    token, _ = token_create(user=user)
    return {
        "ad": ad,
        "draft": draft,
        "run": run,
        "staff": staff,
        "invitation": invitation,
        "token": token,
        **voices,
    }


def takes_effect(row: Row, caller: str, user) -> bool:
    if user.is_superuser:
        return True
    if not user.has_perm(row.permission):
        return False
    return row.role_action is None or allows(STAFF[caller][1], row.role_action)


@pytest.mark.parametrize("row", ROWS, ids=lambda row: f"{row.model} {row.action}")
@pytest.mark.parametrize("caller", [*STAFF, "superuser"])
def test_an_admin_action_takes_effect_only_as_the_role_table_allows(client, world, row, caller):
    user = world["staff"][caller]
    target = row.target(world)
    client.force_login(user)
    app_label, model_name = row.model.split(".")

    client.post(
        reverse(f"admin:{app_label}_{model_name}_changelist"),
        {"action": row.action, "_selected_action": [str(target.pk)], "post": "yes"},
    )

    assert row.took_effect(target) is takes_effect(row, caller, user)


# Actions that change nothing: each is refused without its model's view permission
# (tests/evaluations/test_admin.py for the one there is).
READ_ONLY_ACTIONS = {("evaluations.evaluationrun", "compare_two")}


def test_every_admin_action_has_a_row(django_user_model):
    root = django_user_model.objects.create_superuser(username="root")
    request = RequestFactory().get("/admin/")
    request.user = root
    actions = {
        (f"{model._meta.app_label}.{model._meta.model_name}", name)
        for model, model_admin in admin.site._registry.items()
        if model._meta.app_label in {*PRODUCT_APPS, "renders", "evaluations", "accounts"}
        for name in model_admin.get_actions(request)
    }
    rows = {(row.model, row.action) for row in ROWS} | READ_ONLY_ACTIONS
    assert actions - rows == set(), "admin actions with no row in the matrix"
    assert rows - actions == set(), "rows for admin actions that do not exist"


def test_catalogue_managers_curate_voices_and_see_no_ad(client, django_user_model, world):
    curator = django_user_model.objects.create_user(username="cleo", is_staff=True)
    curator.groups.add(Group.objects.get(name=CATALOGUE_MANAGERS))
    client.force_login(curator)

    client.post(
        reverse("admin:voices_voice_changelist"),
        {"action": "approve", "_selected_action": [str(world["unapproved"].pk)]},
    )

    assert Voice.objects.get(pk=world["unapproved"].pk).approved
    assert client.get(reverse("admin:drafts_ad_changelist")).status_code == 403
    assert not curator.has_perm("voices.delete_voice")
