"""An interactive conversation with the creative director in the terminal.

One message per line from standard input, so it can be scripted:
``printf 'make the music more upbeat\\n' | python manage.py chat --brief "..." --language th``.
"""

from __future__ import annotations

import json
import sys
import time
import uuid

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from conversations import providers
from conversations.models import Run, RunEvent, RunEventType, RunStatus
from conversations.selectors import conversation_latest, run_drafts
from conversations.services import send_message, start_generation
from drafts.models import Ad
from drafts.services import ad_create
from voices.languages import UnknownLanguage, normalise_language

POLL_SECONDS = 0.2


class Command(BaseCommand):
    help = "Talk to the creative director about an ad: one message per line of input."

    def add_arguments(self, parser) -> None:
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--ad", help="id of an existing ad")
        target.add_argument("--brief", help="client description of a new ad")
        parser.add_argument("--language", help="language of a new ad (code or name)")
        parser.add_argument("--duration", type=int, default=30, help="seconds (default 30)")
        parser.add_argument("--market", default="", help="market of a new ad, e.g. TH")
        parser.add_argument("--provider", choices=providers.PROVIDER_NAMES)
        parser.add_argument("--user", help="owner of a new ad (default: the first superuser)")
        parser.add_argument(
            "--timeout", type=float, default=600, help="seconds to wait for each run"
        )

    def handle(self, *args, **options) -> None:
        ad = self._ad(options)
        conversation = conversation_latest(ad_id=ad.pk)
        if conversation is None:
            try:
                run = start_generation(ad=ad, provider=options["provider"])
            except providers.ProviderUnavailable as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(f"Ad {ad.pk}: generating drafts from the brief ...")
            run = self._follow(run, options["timeout"])
            conversation = run.conversation
        else:
            self.stdout.write(f"Ad {ad.pk}: continuing conversation {conversation.pk}.")
        interactive = sys.stdin.isatty()
        while True:
            if interactive:
                self.stdout.write("you> ", ending="")
                self.stdout.flush()
            line = sys.stdin.readline()
            if not line:
                return
            text = line.strip()
            if text:
                run = send_message(conversation=conversation, text=text)
                self._follow(run, options["timeout"])

    def _ad(self, options) -> Ad:
        if options["ad"]:
            ad = Ad.objects.filter(pk=options["ad"]).first() if _is_uuid(options["ad"]) else None
            if ad is None:
                raise CommandError(f"No ad with id {options['ad']!r}.")
            return ad
        if not options["language"]:
            raise CommandError("--language is required with --brief.")
        try:
            language = normalise_language(options["language"]).code
        except UnknownLanguage as exc:
            raise CommandError(str(exc)) from None
        if not 5 <= options["duration"] <= 120:
            raise CommandError("--duration must be between 5 and 120 seconds.")
        return ad_create(
            owner=self._owner(options["user"]),
            client=options["brief"],
            duration_s=options["duration"],
            market=options["market"],
            language=language,
        )

    def _owner(self, username: str | None):
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

    def _follow(self, run: Run, timeout: float) -> Run:
        """Print the run's tool calls, drafts and final message as they happen."""
        last = 0
        deadline = time.monotonic() + timeout
        while True:
            for event in RunEvent.objects.filter(run=run, seq__gt=last).order_by("seq"):
                last = event.seq
                self._print_event(event)
            run.refresh_from_db()
            if (
                run.status in RunStatus.finished()
                and not RunEvent.objects.filter(run=run, seq__gt=last).exists()
            ):
                break
            if time.monotonic() > deadline:
                self.stderr.write(f"Run {run.pk} still {run.status} after {timeout:.0f} s.")
                return run
            time.sleep(POLL_SECONDS)
        if run.status == RunStatus.SUCCEEDED:
            drafts, _ = run_drafts(run=run)
            if drafts:
                made = ", ".join(f"{kind} {version}" for kind, version in drafts.items())
                self.stdout.write(f"drafts: {made}")
            self.stdout.write(f"assistant> {run.final_message}")
        else:
            self.stdout.write(f"run {run.status}: {run.error_code} {run.error_message}".rstrip())
        return run

    def _print_event(self, event: RunEvent) -> None:
        data = event.data
        if event.type == RunEventType.TOOL_CALL_STARTED:
            args = json.dumps(data.get("arguments", {}), ensure_ascii=False)
            self.stdout.write(f"  -> {data['name']} {args[:200]}")
        elif event.type == RunEventType.TOOL_CALL_FINISHED and data.get("isError"):
            self.stdout.write(f"  !! {data['name']}: {data['result'].get('error', '')}")
        elif event.type == RunEventType.DRAFT_CREATED:
            self.stdout.write(f"  ++ {data['kind']} {data['version']}")


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True
