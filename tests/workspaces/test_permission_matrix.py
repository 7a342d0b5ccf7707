"""Every API endpoint x method x kind of caller -> the status the role table says, and
nothing changed when refused. Generated from ``workspaces.roles``: a new endpoint with
no row here fails ``test_every_api_endpoint_has_a_row``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.contrib.auth.models import Group
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import ApiToken
from accounts.services import token_create
from conversations.models import Conversation, Run, RunStatus
from drafts.models import Activation, Ad, Draft
from drafts.reviewers import REVIEWERS
from drafts.services import draft_create
from renders.models import Render
from tests.support.versions import music, voices
from workspaces.invitations import invitation_send
from workspaces.models import AuditEntry, Membership, Workspace
from workspaces.roles import Action, MemberRole, allows

pytestmark = pytest.mark.django_db

# Callers: a member with each role, and those the model must refuse whatever else they are.
ROLE_OF: dict[str, MemberRole | None] = {
    "viewer": MemberRole.VIEWER,
    "reviewer": MemberRole.REVIEWER,
    "editor": MemberRole.EDITOR,
    "admin": MemberRole.ADMIN,
    "outsider": None,  # an admin of another workspace
    "staff": None,  # is_staff, no group, no membership
    "staff_reviewer": None,  # is_staff, in the Reviewers group, no membership
}
CALLERS = [*ROLE_OF, "superuser", "anonymous"]

BRIEF = {"clientDescription": "Spotify Premium family plan", "language": "th"}


@dataclass
class World:
    workspace: Workspace
    target: Workspace  # where every member of ``workspace`` is an admin: a move's target
    ad: Ad
    draft: Draft  # music v2, not active
    conversation: Conversation
    run: Run  # queued
    render: Render  # of the latest versions, queued
    colleague_id: int  # a viewer of ``workspace``, whose membership the rows change
    colleague_token: ApiToken  # nobody's but the colleague's to see or revoke
    users: dict = field(default_factory=dict)
    tokens: dict = field(default_factory=dict)  # each caller's API token
    invitation_id: str = ""  # an open invitation to ``workspace``, of nobody among the callers


@pytest.fixture
def world(django_user_model) -> World:
    make = django_user_model.objects.create_user
    users = {name: make(username=name, password=f"pw-{name}-123") for name in ROLE_OF}
    users["superuser"] = django_user_model.objects.create_superuser(
        username="superuser", password="pw-superuser-123"
    )
    for name in ("staff", "staff_reviewer"):
        users[name].is_staff = True
        users[name].save(update_fields=["is_staff"])
    users["staff_reviewer"].groups.add(Group.objects.get(name=REVIEWERS))
    colleague = make(username="colleague")
    make(username="newcomer")

    workspace = Workspace.objects.create(name="Agency / Spotify")
    target = Workspace.objects.create(name="Agency / archive")
    other = Workspace.objects.create(name="Another agency")
    for name, role in ROLE_OF.items():
        if role is not None:
            Membership.objects.create(workspace=workspace, user=users[name], role=role)
            Membership.objects.create(workspace=target, user=users[name], role=MemberRole.ADMIN)
    Membership.objects.create(workspace=workspace, user=colleague, role=MemberRole.VIEWER)
    Membership.objects.create(workspace=other, user=users["outsider"], role=MemberRole.ADMIN)
    Membership.objects.create(workspace=target, user=users["outsider"], role=MemberRole.ADMIN)

    ad = Ad.objects.create(
        workspace=workspace, owner=users["editor"], title="Family plan", client="Spotify",
        language="th", duration_s=30,
    )  # fmt: skip
    draft_create(ad=ad, version=voices())
    draft_create(ad=ad, version=music("warm pop"))
    draft, _ = draft_create(ad=ad, version=music("upbeat pop"))
    conversation = Conversation.objects.create(ad=ad, provider="demo")
    Run.objects.create(
        conversation=conversation,
        input_text="hi",
        status=RunStatus.SUCCEEDED,
        finished_at=timezone.now(),
    )
    run = Run.objects.create(conversation=conversation, input_text="again")
    render = Render.objects.create(ad=ad, music=draft)
    invitation = invitation_send(
        workspace=workspace, kind="username", identifier="newcomer", role=MemberRole.VIEWER, by=None
    )
    colleague_token, _ = token_create(user=colleague)
    tokens = {name: token_create(user=users[name])[1] for name in users}
    return World(
        workspace, target, ad, draft, conversation, run, render, colleague.pk, colleague_token,
        users, tokens, str(invitation.pk),
    )  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One endpoint and method: the action it takes, the status it answers when allowed,
    and the status for a caller who is no member of the workspace."""

    name: str
    method: str
    path: Callable[[World], str]
    action: Action | None = None  # None: any signed-in caller (``everyone``)
    ok: int = 200
    not_member: int = 404
    body: Callable[[World], dict] | None = None
    everyone: bool = False  # not about a workspace: any signed-in caller
    public: bool = False  # anonymous callers too
    permission_only: bool = False  # a Django permission, which only the superuser has here


ad_path = lambda w: f"/api/ads/{w.ad.pk}/"  # noqa: E731
run_path = lambda w: f"/api/runs/{w.run.pk}"  # noqa: E731
members = lambda w: f"/api/workspaces/{w.workspace.pk}/members/"  # noqa: E731
colleague = lambda w: f"/api/workspaces/{w.workspace.pk}/members/{w.colleague_id}/"  # noqa: E731

ROWS = [
    Row("ad-list", "get", lambda w: "/api/ads/", everyone=True),
    Row("ad-list", "post", lambda w: "/api/ads/", Action.CREATE_AD, 201,
        body=lambda w: {**BRIEF, "workspace": str(w.workspace.pk)}),
    Row("ad-detail", "get", ad_path, Action.VIEW),
    Row("ad-detail", "put", ad_path, Action.EDIT_AD, body=lambda w: BRIEF),
    Row("ad-detail", "patch", ad_path, Action.EDIT_AD, body=lambda w: {"title": "Renamed"}),
    Row("ad-detail", "delete", ad_path, Action.ARCHIVE_AD, 204),
    Row("ad-drafts", "get", lambda w: f"/api/ads/{w.ad.pk}/drafts/", Action.VIEW),
    Row("ad-state", "get", lambda w: f"/api/ads/{w.ad.pk}/state/", Action.VIEW),
    Row("ad-move", "post", lambda w: f"/api/ads/{w.ad.pk}/move/", Action.MOVE_AD,
        body=lambda w: {"workspace": str(w.target.pk)}),
    Row("draft-detail", "get", lambda w: f"/api/drafts/{w.draft.pk}/", Action.VIEW),
    Row("draft-activate", "post", lambda w: f"/api/drafts/{w.draft.pk}/activate",
        Action.ACTIVATE),
    Row("generate", "post", lambda w: "/api/ai/generate", Action.CHAT, 202,
        body=lambda w: {"adId": str(w.ad.pk)}),
    Row("ad-chat", "post", lambda w: f"/api/ads/{w.ad.pk}/chat", Action.CHAT, 202,
        body=lambda w: {"message": "Make the music more upbeat"}),
    Row("ad-ui-chat", "post", lambda w: f"/api/ads/{w.ad.pk}/ui-chat", Action.CHAT,
        body=lambda w: {"id": str(w.conversation.pk), "messages": [
            {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Shorter"}]}]}),
    Row("ad-ui-chat-stream", "get",
        lambda w: f"/api/ads/{w.ad.pk}/ui-chat/{w.conversation.pk}/stream", Action.VIEW),
    Row("ad-conversation", "get", lambda w: f"/api/ads/{w.ad.pk}/conversation", Action.VIEW),
    Row("ad-conversation-ui", "get", lambda w: f"/api/ads/{w.ad.pk}/conversation/ui",
        Action.VIEW),
    Row("ad-conversation-model", "get", lambda w: f"/api/ads/{w.ad.pk}/conversation/model",
        Action.VIEW),
    Row("run-detail", "get", run_path, Action.VIEW),
    Row("run-cancel", "post", lambda w: f"{run_path(w)}/cancel", Action.CANCEL, 202),
    Row("run-events", "get", lambda w: f"{run_path(w)}/events", Action.VIEW),
    Row("run-event-stream", "get", lambda w: f"{run_path(w)}/events/stream", Action.VIEW),
    Row("conversation-messages", "get",
        lambda w: f"/api/conversations/{w.conversation.pk}/messages/", Action.VIEW),
    Row("conversation-messages-ui", "get",
        lambda w: f"/api/conversations/{w.conversation.pk}/messages/ui/", Action.VIEW),
    Row("conversation-messages-model", "get",
        lambda w: f"/api/conversations/{w.conversation.pk}/messages/model/", Action.VIEW),
    Row("stats", "get", lambda w: "/api/stats/", permission_only=True),
    Row("ad-renders", "post", lambda w: f"/api/ads/{w.ad.pk}/renders", Action.VIEW, 202,
        body=lambda w: {}),
    Row("render-detail", "get", lambda w: f"/api/renders/{w.render.pk}", Action.VIEW),
    # Its authorisation is the expiring link's token (tests/renders): without one, nobody.
    Row("render-audio", "get", lambda w: f"/api/renders/{w.render.pk}/audio", ok=404,
        public=True),
    Row("workspace-list", "get", lambda w: "/api/workspaces/", everyone=True),
    Row("workspace-list", "post", lambda w: "/api/workspaces/", ok=201, everyone=True,
        body=lambda w: {"name": "New team"}),
    Row("workspace-detail", "get", lambda w: f"/api/workspaces/{w.workspace.pk}/", Action.VIEW),
    Row("workspace-members", "get", members, Action.MANAGE_MEMBERS),
    Row("workspace-members", "post", members, Action.MANAGE_MEMBERS, 202,
        body=lambda w: {"username": "another-newcomer", "role": "editor"}),
    Row("workspace-invitations", "get", lambda w: f"/api/workspaces/{w.workspace.pk}/invitations/",
        Action.MANAGE_MEMBERS),
    Row("workspace-invitation", "delete",
        lambda w: f"/api/workspaces/{w.workspace.pk}/invitations/{w.invitation_id}/",
        Action.MANAGE_MEMBERS, 204),
    # Addressed to none of the callers: listed for none, found by none.
    Row("invitations", "get", lambda w: "/api/invitations/", everyone=True),
    Row("invitation-accept", "post", lambda w: f"/api/invitations/{w.invitation_id}/accept",
        ok=404, everyone=True),
    Row("invitation-decline", "post", lambda w: f"/api/invitations/{w.invitation_id}/decline",
        ok=404, everyone=True),
    Row("workspace-member", "patch", colleague, Action.MANAGE_MEMBERS,
        body=lambda w: {"role": "reviewer"}),
    Row("workspace-member", "delete", colleague, Action.MANAGE_MEMBERS, 204),
    Row("voice-list", "get", lambda w: "/api/voices/?language=th", everyone=True),
    Row("voice-detail", "get", lambda w: "/api/voices/1/", ok=404, everyone=True),
    # A person's own tokens (tests/accounts): another's answers 404, even to a superuser;
    # a token cannot make another (only a signed-in session can).
    Row("token-list", "get", lambda w: "/api/auth/tokens/", everyone=True),
    Row("token-list", "post", lambda w: "/api/auth/tokens/", ok=403, everyone=True,
        body=lambda w: {"name": "laptop"}),
    Row("token-detail", "get", lambda w: f"/api/auth/tokens/{w.colleague_token.pk}/", ok=404,
        everyone=True),
    Row("token-detail", "delete", lambda w: f"/api/auth/tokens/{w.colleague_token.pk}/",
        ok=404, everyone=True),
    Row("api-root", "get", lambda w: "/api/", everyone=True),
    Row("schema", "get", lambda w: "/api/schema/", public=True),
    Row("swagger-ui", "get", lambda w: "/api/docs/", public=True),
]  # fmt: skip


def expected_status(row: Row, caller: str) -> int:
    if row.public:
        return row.ok
    if caller == "anonymous":
        return 401
    if row.everyone or caller == "superuser":
        return row.ok
    if row.permission_only:
        return 403
    role = ROLE_OF[caller]
    if role is None:
        return row.not_member
    return row.ok if allows(role, row.action) else 403


def snapshot(world: World) -> dict:
    """What a refused request must leave as it was."""
    ad = Ad.objects.get(pk=world.ad.pk)
    return {
        "ad": (ad.title, ad.client, ad.workspace_id, ad.archived_at),
        "ads": Ad.objects.count(),
        "drafts": sorted(Draft.objects.values_list("kind", "version", "status")),
        "activations": Activation.objects.count(),
        "conversations": Conversation.objects.count(),
        "runs": sorted((str(r.pk), r.status, r.cancel_requested) for r in Run.objects.all()),
        "workspaces": Workspace.objects.count(),
        "members": sorted(Membership.objects.values_list("workspace_id", "user_id", "role")),
        "audit": AuditEntry.objects.count(),
        "tokens": sorted(ApiToken.objects.values_list("id", "revoked_at")),
    }


class _Undo(Exception):
    """Raised to roll a caller's request back, so that each caller meets the same world."""


def call(world: World, row: Row, caller: str):
    client = APIClient()
    if caller != "anonymous":
        client.credentials(HTTP_AUTHORIZATION=f"Token {world.tokens[caller]}")
    body = row.body(world) if row.body else None
    # A stream's body is not read (its generator never starts): its status is what counts.
    return getattr(client, row.method)(row.path(world), body, format="json")


@pytest.mark.parametrize("row", ROWS, ids=lambda row: f"{row.method.upper()} {row.name}")
def test_each_caller_gets_what_the_role_table_allows(world, row):
    before = snapshot(world)  # what every caller meets: each one's request is rolled back
    wrong = []
    for caller in CALLERS:
        try:
            with transaction.atomic():
                response = call(world, row, caller)
                after = snapshot(world)
                raise _Undo
        except _Undo:
            pass
        want = expected_status(row, caller)
        if response.status_code != want:
            wrong.append(f"{caller}: {response.status_code}, expected {want}")
        elif response.status_code >= 400 and after != before:
            changed = [key for key in before if before[key] != after[key]]
            wrong.append(f"{caller}: refused with {response.status_code} but changed {changed}")
    assert not wrong, f"{row.method.upper()} {row.name}:\n" + "\n".join(wrong)


def test_lists_show_only_the_callers_workspaces(world):
    for caller in CALLERS[:-1]:
        client = APIClient()
        client.force_authenticate(world.users[caller])
        ads = {item["id"] for item in client.get("/api/ads/").json()["results"]}
        spaces = {item["id"] for item in client.get("/api/workspaces/").json()["results"]}
        member = caller == "superuser" or ROLE_OF[caller] is not None
        assert (str(world.ad.pk) in ads) is member, caller
        assert (str(world.workspace.pk) in spaces) is member, caller


def _api_routes(resolver: URLResolver, prefix: str = "") -> set[tuple[str, str]]:
    """(url name, method) of every view under /api/."""
    routes: set[tuple[str, str]] = set()
    for pattern in resolver.url_patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            routes |= _api_routes(pattern, route)
        elif isinstance(pattern, URLPattern) and route.lstrip("^").startswith("api/"):
            callback = pattern.callback
            actions = getattr(callback, "actions", None)
            if actions:
                methods = set(actions)
            else:
                view = callback.view_class
                methods = {m for m in view.http_method_names if hasattr(view, m)}
            routes |= {(pattern.name, m) for m in methods - {"head", "options"}}
    return routes


def test_every_api_endpoint_has_a_row():
    rows = {(row.name, row.method) for row in ROWS}
    missing = _api_routes(get_resolver()) - rows
    assert not missing, f"endpoints with no row in the permission matrix: {sorted(missing)}"
    assert not rows - _api_routes(get_resolver()), "rows for endpoints that do not exist"
