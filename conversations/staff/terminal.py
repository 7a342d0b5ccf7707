"""The terminal chat's session (``manage.py chat``): what a person types is either a slash
command the terminal answers itself (state, drafts, activation) or a message to the
creative director, whose run it follows and prints. The model never activates drafts, so
an activation asked in plain words is answered here, never sent.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from django.conf import settings
from django.core.management.base import OutputWrapper
from django.db import DatabaseError, connection

from adstudio.text import clip_words
from conversations.models import Conversation, Run, RunEvent, RunEventType, RunStatus
from conversations.run_request import RunRequest
from conversations.selectors import conversation_latest, run_drafts
from conversations.services import brief_send, send_message
from drafts.models import ActivationSource, Ad, DraftKind
from drafts.selectors import draft_state, drafts_for
from drafts.services import AdArchived, draft_activate
from renders.models import RenderStatus
from renders.services import NothingToRender, render_report, render_request, versions_of
from workspaces.access import may, require, role_in
from workspaces.roles import Action

POLL_SECONDS = 0.2
# Exit status after Ctrl-C, as shells report a process ended by SIGINT (128 + 2).
INTERRUPTED_STATUS = 130
HISTORY_FILE = Path("~/.adstudio_chat_history")
HISTORY_LINES = 1000

# Kind names as people type them; the canonical ones first.
KIND_NAMES = {
    "voices": DraftKind.VOICES,
    "music": DraftKind.MUSIC,
    "sfx": DraftKind.SFX,
    "voice": DraftKind.VOICES,
    "effects": DraftKind.SFX,
}
# "activate music v2", "please activate the voices version 3": asked of the director, who
# cannot do it. Only the start of the line is read: nothing of such a line is sent.
ACTIVATION_REQUEST = re.compile(
    r"^\s*(?:please\s+)?activate\s+(?:the\s+)?(?P<kind>[a-z]+)\s+(?:version\s+)?"
    r"(?P<version>v?\d+)\b",
    re.IGNORECASE,
)
# Whole lines that mean the command, as psql reads a bare "help", "quit" or "exit".
BARE_COMMANDS = {"help": "/help", "quit": "/quit", "exit": "/exit"}

HELP = f"""\
Commands (any other line is a message to the creative director):
  /state                  active and latest version of voices, music and sfx
  /drafts                 every version of each kind, newest first, with its status
  /activate KIND VERSION  make a version live, e.g. /activate music v2
                          (KIND: voices, music or sfx; a reviewer, editor or admin)
  /render [FILE]          hear the latest versions: a scratch track written to FILE
                          (.ogg, or .wav; scratch-AD.ogg by default), its timeline printed
  /help                   this list
  /quit, /exit            leave; so does Ctrl-D (exit status 0)
  Ctrl-C                  leave at once (exit status {INTERRUPTED_STATUS})"""
RENDER_WAIT_S = 60.0
ACTIVATE_USAGE = (
    "Usage: /activate KIND VERSION, e.g. /activate music v2 (KIND: voices, music or sfx)."
)


@contextmanager
def quiet_logs(*, verbose: bool) -> Iterator[None]:
    """Keep INFO and DEBUG records (httpx, celery, our loggers) out of the conversation
    for the block's duration; warnings and errors still show. ``verbose`` leaves logging
    as configured (``LOGGING``, ``LOG_LEVEL``)."""
    if verbose:
        yield
        return
    previous = logging.root.manager.disable
    logging.disable(max(previous, logging.INFO))
    try:
        yield
    finally:
        logging.disable(previous)


@contextmanager
def line_editing(*, enabled: bool) -> Iterator[None]:
    """Line editing and history for ``input()`` at a terminal, the history kept between
    sessions in ``~/.adstudio_chat_history``. Without readline (some platforms) or a
    readable or writable history file, the chat works the same without them."""
    readline = None
    if enabled:
        with suppress(ImportError):
            import readline
    path = HISTORY_FILE.expanduser()
    if readline is not None:
        readline.set_history_length(HISTORY_LINES)
        with suppress(OSError):
            readline.read_history_file(path)
    try:
        yield
    finally:
        if readline is not None:
            with suppress(OSError):
                readline.write_history_file(path)


def parse_kind(word: str) -> DraftKind | None:
    return KIND_NAMES.get(word.lower())


def parse_version(word: str) -> int | None:
    """``v2`` or ``2`` -> 2; None for anything else."""
    match = re.fullmatch(r"v?(\d+)", word, re.IGNORECASE)
    return int(match.group(1)) if match and int(match.group(1)) > 0 else None


def activation_request(text: str) -> tuple[DraftKind, int] | None:
    """The kind and version a plain-words line asks to activate, if it asks that."""
    match = ACTIVATION_REQUEST.match(text)
    if match is None:
        return None
    kind, version = parse_kind(match["kind"]), parse_version(match["version"])
    return (kind, version) if kind and version else None


class ChatSession:
    """One person's conversation about one ad: ``open()`` it, then ``handle()`` each line
    they type until it returns False. ``user`` is who acts: activations are theirs."""

    def __init__(
        self, *, ad: Ad, user, out: OutputWrapper, err: OutputWrapper, timeout: float
    ) -> None:
        self.ad = ad
        self.user = user
        self.out = out
        self.err = err
        self.timeout = timeout
        self.conversation: Conversation | None = None
        self.activate_hint_shown = False

    def open(self, *, provider: str | None) -> None:
        """Generate the first drafts from the brief, or pick up the ad's latest
        conversation; either way show where the drafts stand. Raises
        ``ProviderUnavailable`` for a requested provider that is not configured."""
        self.conversation = conversation_latest(ad_id=self.ad.pk)
        if self.conversation is not None:
            self.out.write(f"Ad {self.ad.pk}: continuing conversation {self.conversation.pk}.")
            self.show_state()
            return
        if not self._allowed(Action.CHAT, "generate drafts for this ad"):
            return
        run = brief_send(request=RunRequest(user=self.user, ad=self.ad, provider=provider))
        self.out.write(f"Ad {self.ad.pk}: generating drafts from the brief ...")
        run = self.follow(run)
        self.conversation = run.conversation
        self.show_state()
        self._hint_activation(run)

    def handle(self, line: str) -> bool:
        """Answer one line; False when the person asked to leave."""
        text = line.strip()
        if not text:
            return True
        text = BARE_COMMANDS.get(text.lower(), text)
        if text.startswith("/"):
            return self._command(text)
        requested = activation_request(text)
        if requested is not None:
            kind, version = requested
            self.out.write(
                "Messages to the director cannot activate drafts, so this one was not sent. "
                f"To make {kind} v{version} live, type: /activate {kind} v{version}"
            )
            return True
        if not self._allowed(Action.CHAT, "send messages about this ad"):
            return True
        if self.conversation is None:
            self.out.write("This ad has no conversation yet; nothing was sent.")
            return True
        if self.ad.archived_at is not None:
            self.out.write("This ad is archived: it can be read, not changed. Nothing was sent.")
            return True
        run = send_message(
            request=RunRequest(
                user=self.user, ad=self.ad, conversation=self.conversation, text=text
            )
        )
        self._hint_activation(self.follow(run))
        return True

    def interrupted(self) -> None:
        """After Ctrl-C: end the line it was typed on and say what became of a run this
        person started and did not see finish."""
        self.out.write("")
        try:
            run = self._unfinished_run()
        except DatabaseError:
            # Ctrl-C broke the query in flight (following the run): ask on a new connection.
            connection.close()
            try:
                run = self._unfinished_run()
            except DatabaseError:
                return
        if run is None:
            return
        if settings.CELERY_TASK_ALWAYS_EAGER:
            self.out.write(
                f"Run {run.pk} was interrupted: it ran in this process (no CELERY_BROKER_URL), "
                f"so it stays {run.status} until a worker's recovery sweep resumes it."
            )
        else:
            self.out.write(
                f"Run {run.pk} continues in the background; see its drafts later with "
                f"--ad {self.ad.pk}."
            )

    def _unfinished_run(self) -> Run | None:
        return (
            Run.objects.filter(conversation__ad=self.ad, requested_by=self.user)
            .exclude(status__in=RunStatus.finished())
            .order_by("-created_at")
            .first()
        )

    # --- slash commands ---------------------------------------------------------------

    def _command(self, text: str) -> bool:
        name, *args = text.split()
        if name in ("/quit", "/exit"):
            return False
        if name == "/help":
            self.out.write(HELP)
        elif name == "/state":
            self.show_state()
        elif name == "/drafts":
            self.show_drafts()
        elif name == "/activate":
            self.activate(args)
        elif name == "/render":
            self.render(args)
        else:
            self.out.write(f"Unknown command {name}; /help lists them.")
        return True

    def show_state(self) -> None:
        """Per kind, the active and the latest version, as ``GET /api/ads/{id}/state``."""
        self.out.write("Drafts now:")
        for kind, entry in draft_state(ad=self.ad).items():
            if entry["latest"] is None:
                self.out.write(f"  {kind:<6}  no drafts yet")
                continue
            active = f"active {entry['active']}" if entry["active"] else "none active"
            summary = clip_words(entry["latestSummary"] or "", 70)
            self.out.write(f"  {kind:<6}  {active:<11}  latest {entry['latest']:<4}  {summary}")

    def show_drafts(self) -> None:
        """Every version the acting user may see, grouped by kind, newest first."""
        drafts = drafts_for(self.user).filter(ad_id=self.ad.pk).order_by("-version")
        by_kind: dict[str, list] = {kind: [] for kind in DraftKind.values}
        for draft in drafts:
            by_kind[draft.kind].append(draft)
        for kind, versions in by_kind.items():
            self.out.write(f"{kind}:" if versions else f"{kind}: no drafts yet")
            for draft in versions:
                summary = clip_words(draft.summary, 80)
                self.out.write(f"  {draft.label:<4}  {draft.status:<8}  {summary}")

    def render(self, args: list[str]) -> None:
        """A scratch track of the latest versions, written to a file, its timeline printed
        (made here without a broker, by a worker with one)."""
        path = Path(args[0] if args else f"scratch-{str(self.ad.pk)[:8]}.ogg")
        if path.suffix.lower() not in (".ogg", ".wav"):
            self.out.write(f"{path}: a scratch track is written as .ogg or .wav.")
            return
        try:
            render, _ = render_request(ad=self.ad, versions=versions_of(self.ad), user=self.user)
        except NothingToRender as exc:
            self.out.write(str(exc))
            return
        deadline = time.monotonic() + RENDER_WAIT_S
        while render.status in (RenderStatus.QUEUED, RenderStatus.RENDERING):
            if time.monotonic() > deadline:
                self.out.write("The scratch track is still rendering; /render again shortly.")
                return
            time.sleep(0.2)
            render.refresh_from_db()
        if render.status == RenderStatus.FAILED:
            self.out.write(f"The scratch track could not be made: {render.error}")
            return
        source = render.wav if path.suffix.lower() == ".wav" else render.audio
        with source.open("rb") as audio:
            path.write_bytes(audio.read())
        self.out.write(render_report(render))
        self.out.write(f"Written to {path}.")

    def _allowed(self, action: Action, what: str) -> bool:
        """Whether the acting user's role in the ad's workspace allows ``action``; if not,
        say so (nothing is changed)."""
        if may(self.user, self.ad.workspace_id, action):
            return True
        role = role_in(self.user, self.ad.workspace_id)
        who = f"a {role} of" if role else "not a member of"
        self.out.write(
            f"{self.user.get_username()} may not {what}: they are {who} workspace "
            f"{self.ad.workspace}. Nothing was changed."
        )
        return False

    def activate(self, args: list[str]) -> None:
        """Make a version live as the acting user, if their role in the ad's workspace
        allows it (``workspaces.roles``, as the API and the admin ask); the activation
        is recorded as made through the terminal."""
        if not self._allowed(Action.ACTIVATE, "activate drafts"):
            return
        if len(args) != 2:
            self.out.write(ACTIVATE_USAGE)
            return
        kind, version = parse_kind(args[0]), parse_version(args[1])
        if kind is None:
            self.out.write(f"Unknown kind {args[0]!r}: use voices, music or sfx.")
            return
        if version is None:
            self.out.write(f"{args[1]!r} is not a version: use v2 or 2.")
            return
        draft = drafts_for(self.user).filter(ad_id=self.ad.pk, kind=kind, version=version).first()
        if draft is None:
            self.out.write(f"This ad has no {kind} v{version}; /drafts lists the versions.")
            return
        try:
            result = draft_activate(
                ad=self.ad,
                draft_id=draft.pk,
                by=self.user,
                source=ActivationSource.TERMINAL,
                as_superuser=require(self.user, self.ad.workspace_id, Action.ACTIVATE),
            )
        except AdArchived as exc:
            self.out.write(f"{exc} Nothing was changed.")
            return
        self.out.write(result.message)

    # --- following a run --------------------------------------------------------------

    def follow(self, run: Run) -> Run:
        """Print the run's tool calls, drafts and final message as they happen, until it
        finishes or ``timeout`` seconds pass."""
        last = 0
        deadline = time.monotonic() + self.timeout
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
                self.err.write(f"Run {run.pk} still {run.status} after {self.timeout:.0f} s.")
                return run
            time.sleep(POLL_SECONDS)
        if run.status == RunStatus.SUCCEEDED:
            drafts, _ = run_drafts(run=run)
            if drafts:
                made = ", ".join(f"{kind} {version}" for kind, version in drafts.items())
                self.out.write(f"drafts: {made}")
            self.out.write(f"assistant> {run.final_message}")
        else:
            self.out.write(f"run {run.status}: {run.error_code} {run.error_message}".rstrip())
        return run

    def _print_event(self, event: RunEvent) -> None:
        data = event.data
        if event.type == RunEventType.TOOL_CALL_STARTED:
            args = json.dumps(data.get("arguments", {}), ensure_ascii=False)
            self.out.write(f"  -> {data['name']} {args[:200]}")
        elif event.type == RunEventType.TOOL_CALL_FINISHED and data.get("isError"):
            self.out.write(f"  !! {data['name']}: {data['result'].get('error', '')}")
        elif event.type == RunEventType.DRAFT_CREATED:
            self.out.write(f"  ++ {data['kind']} {data['version']}")

    def _hint_activation(self, run: Run) -> None:
        """The director's replies say to activate versions, which only the person can do,
        here: say how, once a session, after a run that made drafts."""
        if self.activate_hint_shown or run.status != RunStatus.SUCCEEDED:
            return
        drafts, _ = run_drafts(run=run)
        if not drafts:
            return
        kind, version = next(iter(drafts.items()))
        self.out.write(f"/activate KIND VERSION to make one live, e.g. /activate {kind} {version}")
        self.activate_hint_shown = True
