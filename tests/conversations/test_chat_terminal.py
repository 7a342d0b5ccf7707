"""The chat command as a person uses it: ``manage.py chat`` in a pseudo-terminal, with the
prompt, line editing and history, slash commands, Ctrl-C and Ctrl-D.

The command runs as a child process on the test database, so what a test writes must be
committed (``transaction=True``). Without ``CELERY_BROKER_URL`` the child runs its tasks
in-process with the offline demo director; with it, runs wait for a worker.
"""

from __future__ import annotations

import io
import os
import sys

import pexpect
import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command

from conversations.models import Run, RunStatus
from drafts.models import Activation, Ad, DraftStatus
from drafts.reviewers import REVIEWERS
from tests.support.terminal import TerminalProcess
from tests.support.worker import REDIS_URL, ROOT, database_url, flush_broker

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
PROMPT = "you> "
UP_ARROW = "\x1b[A"


@pytest.fixture(autouse=True)
def catalogue(make_voice):
    make_voice(language="en", gender="male", name="Jack")
    make_voice(language="en", gender="female", name="Rachel")


@pytest.fixture
def reviewer(django_user_model):
    """Staff who may activate drafts through the Reviewers group."""
    user = django_user_model.objects.create_user(username="rita", is_staff=True)
    user.groups.add(Group.objects.get(name=REVIEWERS))
    return user


@pytest.fixture
def spawn_chat(tmp_path):
    """``spawn_chat(*args, broker=None)``: the command in a pseudo-terminal, on the test
    database, with no provider key (the demo director answers) and a home of its own
    (its history file)."""
    children: list[TerminalProcess] = []

    def spawn(*args: str, broker: str | None = None) -> TerminalProcess:
        env = {**os.environ, "DATABASE_URL": database_url(), "HOME": str(tmp_path)}
        for name in ("DJANGO_SETTINGS_MODULE", "CELERY_BROKER_URL", "LOG_LEVEL"):
            env.pop(name, None)
        env.update(
            dict.fromkeys(
                ("OPENAI_API_KEY", "DASHSCOPE_API_KEY", "MOONSHOT_API_KEY", "ANTHROPIC_API_KEY"),
                "",
            )
        )
        if broker:
            env["CELERY_BROKER_URL"] = broker
        child = TerminalProcess(
            [sys.executable, "manage.py", "chat", *args],
            cwd=ROOT,
            env=env,
            timeout=15,
            dimensions=(40, 200),
        )
        child.logfile_read = io.StringIO()  # everything it printed, for the assertions
        children.append(child)
        return child

    yield spawn
    for child in children:
        child.close(force=True)


def transcript(child: TerminalProcess) -> str:
    return child.logfile_read.getvalue()


def ended(child: TerminalProcess) -> int:
    """The child's exit status, once it has printed everything."""
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def test_a_session_at_the_terminal(spawn_chat, reviewer, tmp_path):
    child = spawn_chat("--brief", "Tea shop", "--language", "en", "--user", "rita")

    child.expect_exact(PROMPT)
    assert "  music   none active  latest v1" in transcript(child)
    child.sendline("/help")
    child.expect_exact("/activate KIND VERSION  make a version live")
    child.expect_exact(PROMPT)
    child.sendline("/activate music v1")
    child.expect_exact("Activated music v1.")
    child.expect_exact(PROMPT)
    child.send(UP_ARROW + "\r")  # the history's last line, sent again
    child.expect_exact("music v1 was already active.")
    child.expect_exact(PROMPT)
    child.sendintr()

    assert ended(child) == 130
    output = transcript(child)
    assert "Traceback" not in output
    assert " INFO " not in output  # the log lines of the run, kept out of the conversation
    activation = Activation.objects.get()
    assert (activation.draft.kind, activation.draft.status) == ("music", DraftStatus.ACTIVE)
    assert (activation.user, activation.source) == (reviewer, "terminal")
    history = (tmp_path / ".adstudio_chat_history").read_text().splitlines()
    assert history[-2:] == ["/help", "/activate music v1"]


def test_resuming_shows_the_drafts_then_ctrl_d_leaves(spawn_chat, staff_user, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    call_command("chat", "--brief", "Tea shop", "--language", "en", stdout=io.StringIO())
    ad = Ad.objects.get()
    child = spawn_chat("--ad", str(ad.pk))

    child.expect_exact(f"Ad {ad.pk}: continuing conversation")
    child.expect_exact("Drafts now:")
    child.expect_exact("  voices  none active  latest v1")
    child.expect_exact(PROMPT)
    child.sendeof()

    assert ended(child) == 0
    assert "Traceback" not in transcript(child)


def test_ctrl_c_while_a_run_is_followed_leaves_it_to_the_worker(spawn_chat, staff_user):
    """With a broker and no worker yet, the brief's run waits; Ctrl-C leaves it queued."""
    flush_broker(REDIS_URL)
    try:
        child = spawn_chat("--brief", "Tea shop", "--language", "en", broker=REDIS_URL)
        child.expect_exact("generating drafts from the brief ...")
        child.sendintr()

        assert ended(child) == 130
    finally:
        flush_broker(REDIS_URL)
    run = Run.objects.get()
    assert run.status == RunStatus.QUEUED
    output = transcript(child)
    assert f"Run {run.pk} continues in the background" in output
    assert "Traceback" not in output
