"""Who may do what: the one table of role -> allowed actions.

The API, the admin and the terminal chat all ask ``allows(role, action)``; nothing else
decides what a member may do. Roles grow like GitHub's organisation roles: each holds
every action of the one below it.
"""

from __future__ import annotations

from django.db import models


class MemberRole(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    REVIEWER = "reviewer", "Reviewer"
    EDITOR = "editor", "Editor"
    ADMIN = "admin", "Admin"


class Action(models.TextChoices):
    VIEW = "view", "Read the workspace's ads, drafts, conversations and runs"
    ACTIVATE = "activate", "Activate a draft version"
    # A render whose lines a speech provider reads, or whose music a music provider
    # composes, is billed; one of cached lines and music, the guide voice or the placeholder
    # bed costs nothing, and anyone who may view may ask for it.
    RENDER_VOICES = "render_voices", "Render with the speech and music providers (billed)"
    CREATE_AD = "create_ad", "Create an ad"
    EDIT_AD = "edit_ad", "Edit an ad's brief"
    CHAT = "chat", "Generate and chat with the creative director"
    CANCEL = "cancel", "Cancel a run"
    ARCHIVE_AD = "archive_ad", "Archive an ad"
    MOVE_AD = "move_ad", "Move an ad to or from the workspace"
    MANAGE_MEMBERS = "manage_members", "Add, change and remove members"


_VIEWER = frozenset({Action.VIEW})
_REVIEWER = _VIEWER | {Action.ACTIVATE, Action.RENDER_VOICES}
_EDITOR = _REVIEWER | {Action.CREATE_AD, Action.EDIT_AD, Action.CHAT, Action.CANCEL}
_ADMIN = _EDITOR | {Action.ARCHIVE_AD, Action.MOVE_AD, Action.MANAGE_MEMBERS}

ROLE_ACTIONS: dict[MemberRole, frozenset[Action]] = {
    MemberRole.VIEWER: _VIEWER,
    MemberRole.REVIEWER: _REVIEWER,
    MemberRole.EDITOR: _EDITOR,
    MemberRole.ADMIN: _ADMIN,
}


def allows(role: MemberRole | str | None, action: Action | str) -> bool:
    """Whether a member with ``role`` may take ``action``; no role (not a member) allows
    nothing."""
    return role is not None and Action(action) in ROLE_ACTIONS[MemberRole(role)]


def roles_allowed(action: Action | str) -> list[str]:
    """The roles that may take ``action``, for a query's ``role__in``."""
    return [role.value for role, actions in ROLE_ACTIONS.items() if Action(action) in actions]
