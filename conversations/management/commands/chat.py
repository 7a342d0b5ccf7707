"""An interactive conversation with the creative director in the terminal.

At a terminal it prompts ``you>`` with line editing and history; slash commands
(``/help``) show the drafts and activate them. Piped, it reads one message (or slash
command) per line, so it can be scripted:
``printf 'make the music more upbeat\\n' | python manage.py chat --brief "..." --language th``.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

import providers
from adstudio.languages import UnknownLanguage, normalise_language
from conversations.staff.terminal import INTERRUPTED_STATUS, ChatSession, line_editing, quiet_logs
from drafts.models import Ad
from drafts.selectors import ads_for
from drafts.services import ad_create
from workspaces.access import may, role_in
from workspaces.models import Workspace
from workspaces.roles import Action
from workspaces.selectors import workspaces_for


class Command(BaseCommand):
    help = (
        "Talk to the creative director about an ad: one message per line of input. "
        "Lines starting with / are commands the terminal answers itself (/help lists them: "
        "/state, /drafts, /activate KIND VERSION, /quit). /quit or end of input (Ctrl-D) "
        f"exits with status 0, Ctrl-C with status {INTERRUPTED_STATUS}."
    )

    def add_arguments(self, parser) -> None:
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--ad", help="id of an existing ad")
        target.add_argument("--brief", help="client description of a new ad")
        parser.add_argument("--language", help="language of a new ad (code or name)")
        parser.add_argument("--duration", type=int, default=30, help="seconds (default 30)")
        parser.add_argument("--market", default="", help="market of a new ad, e.g. TH")
        parser.add_argument("--provider", choices=providers.PROVIDER_NAMES)
        parser.add_argument(
            "--user",
            help="who you are: owns a new ad, activates drafts (default: the first superuser)",
        )
        parser.add_argument(
            "--workspace",
            help="id or name of the workspace you act in: a new ad is created there (your "
            "personal one by default); an --ad must be in it",
        )
        parser.add_argument(
            "--timeout", type=float, default=600, help="seconds to wait for each run"
        )
        parser.add_argument(
            "--verbose", action="store_true", help="show INFO log lines (quiet by default)"
        )

    def handle(self, *args, **options) -> None:
        interactive = sys.stdin.isatty()
        with quiet_logs(verbose=options["verbose"]), line_editing(enabled=interactive):
            user = self._user(options["user"])
            workspace = self._workspace(options["workspace"], user)
            session = ChatSession(
                ad=self._ad(options, user, workspace),
                user=user,
                out=self.stdout,
                err=self.stderr,
                timeout=options["timeout"],
            )
            try:
                session.open(provider=options["provider"])
                for line in self._lines(interactive):
                    if not session.handle(line):
                        return
            except providers.ProviderUnavailable as exc:
                raise CommandError(str(exc)) from None
            except KeyboardInterrupt:
                session.interrupted()
                raise SystemExit(INTERRUPTED_STATUS) from None

    def _lines(self, interactive: bool) -> Iterator[str]:
        """What the person types: ``input()`` at a terminal (readline's editing and
        history), else one line of standard input at a time, until its end."""
        while True:
            if interactive:
                try:
                    yield input("you> ")
                except EOFError:  # Ctrl-D
                    self.stdout.write("")
                    return
            else:
                line = sys.stdin.readline()
                if not line:
                    return
                yield line

    def _workspace(self, name_or_id: str | None, user) -> Workspace | None:
        """The workspace ``--workspace`` names, among those ``user`` belongs to."""
        if not name_or_id:
            return None
        mine = workspaces_for(user)
        found = list(
            mine.filter(pk=name_or_id) if _is_uuid(name_or_id) else mine.filter(name=name_or_id)
        )
        if not found:
            raise CommandError(
                f"{user.get_username()} is not a member of a workspace {name_or_id!r}."
            )
        if len(found) > 1:
            raise CommandError(f"Several workspaces are called {name_or_id!r}: give its id.")
        return found[0]

    def _ad(self, options, user, workspace: Workspace | None) -> Ad:
        if options["ad"]:
            ads = ads_for(user)
            if workspace is not None:
                ads = ads.filter(workspace=workspace)
            ad = ads.filter(pk=options["ad"]).first() if _is_uuid(options["ad"]) else None
            if ad is None:
                where = f" in {workspace}" if workspace else ""
                raise CommandError(
                    f"No ad with id {options['ad']!r} that {user.get_username()} may see{where}."
                )
            return ad
        if not options["language"]:
            raise CommandError("--language is required with --brief.")
        try:
            language = normalise_language(options["language"]).code
        except UnknownLanguage as exc:
            raise CommandError(str(exc)) from None
        if not 5 <= options["duration"] <= 120:
            raise CommandError("--duration must be between 5 and 120 seconds.")
        if workspace is not None:
            for action in (Action.CREATE_AD, Action.CHAT):
                if not may(user, workspace.pk, action):
                    raise CommandError(
                        f"{user.get_username()} may not create ads in {workspace}: their "
                        f"role there is {role_in(user, workspace.pk)}."
                    )
        return ad_create(
            owner=user,
            workspace=workspace,
            client=options["brief"],
            duration_s=options["duration"],
            market=options["market"],
            language=language,
        )

    def _user(self, username: str | None):
        """Who is at the terminal: ``--user``, or the first superuser. Also for ``--ad``:
        activations are this person's, whoever owns the ad."""
        users = get_user_model().objects
        if username:
            user = users.filter(username=username).first()
            if user is None:
                raise CommandError(f"No user {username!r}.")
            return user
        user = users.filter(is_superuser=True).order_by("pk").first()
        if user is None:
            raise CommandError("No superuser exists: pass --user or run createsuperuser.")
        return user


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
