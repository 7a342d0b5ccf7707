"""The staff chat command, scripted through standard input, with the demo director: the
conversation, and the slash commands the terminal answers without the model."""

from __future__ import annotations

import io
import logging
import sys

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.core.management.base import OutputWrapper

from conversations.models import Conversation, Message, MessageRole, Run
from conversations.staff.terminal import ChatSession
from drafts.models import Activation, Ad, Draft, DraftStatus
from drafts.reviewers import REVIEWERS
from workspaces.models import Membership
from workspaces.roles import MemberRole

pytestmark = pytest.mark.django_db(transaction=True)
HINT = "/activate KIND VERSION to make one live"


@pytest.fixture(autouse=True)
def catalogue(settings, make_voice, staff_user):
    settings.ADSTUDIO_PROVIDERS = {
        name: {**entry, "api_key": ""} for name, entry in settings.ADSTUDIO_PROVIDERS.items()
    }
    make_voice(language="th", gender="male", name="Somchai")
    make_voice(language="th", gender="female", name="Malee")


def chat(monkeypatch, stdin: str, *args: str) -> str:
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    out = io.StringIO()
    call_command("chat", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def reviewer(django_user_model):
    """Staff who may activate drafts through the Reviewers group, and is no superuser."""
    user = django_user_model.objects.create_user(username="rita", is_staff=True)
    user.groups.add(Group.objects.get(name=REVIEWERS))
    return user


def user_messages() -> list[str]:
    return list(
        Message.objects.filter(role=MessageRole.USER).order_by("seq").values_list("text", flat=True)
    )


def statuses(ad: Ad, kind: str) -> dict[str, str]:
    return {d.label: d.status for d in Draft.objects.filter(ad=ad, kind=kind)}


def test_a_scripted_session_generates_then_refines(monkeypatch, staff_user):
    output = chat(
        monkeypatch,
        "make the music more upbeat\n",
        "--brief",
        "Spotify Premium family plan",
        "--language",
        "Thai",
    )

    ad = Ad.objects.get()
    assert ad.owner == staff_user and ad.language == "th"
    assert "-> search_voices" in output
    assert "++ voices v1" in output and "++ music v1" in output and "++ sfx v1" in output
    assert "++ music v2" in output
    assert output.count("assistant> ") == 2
    assert Draft.objects.filter(ad=ad, kind="music").count() == 2
    # The drafts' state once the brief's generation is done, and the hint how to activate
    # (once a session, though the second reply made drafts too).
    first_reply, second_reply = output.split("assistant> ")[1:]
    assert "Drafts now:" in first_reply and "Drafts now:" not in second_reply
    assert "  music   none active  latest v1" in first_reply
    assert output.count(HINT) == 1 and HINT in first_reply


def test_continuing_an_existing_ad(monkeypatch):
    chat(monkeypatch, "", "--brief", "Coffee shop", "--language", "th")
    ad = Ad.objects.get()

    output = chat(monkeypatch, "more sound effects please\n", "--ad", str(ad.pk))

    assert "continuing conversation" in output
    assert "++ sfx v2" in output
    # Where the drafts stand, before the first message is answered.
    assert output.index("Drafts now:") < output.index("++ sfx v2")
    assert "  sfx     none active  latest v1" in output
    assert Draft.objects.filter(ad=ad, kind="sfx").count() == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ad", "not-a-uuid"], "No ad with id 'not-a-uuid'"),
        (["--brief", "x"], "--language is required"),
        (["--brief", "x", "--language", "elvish"], "Unknown language 'elvish'"),
        (["--brief", "x", "--language", "th", "--duration", "500"], "between 5 and 120"),
        (["--brief", "x", "--language", "th", "--provider", "qwen"], "DASHSCOPE_API_KEY"),
    ],
)
def test_bad_arguments_are_clear_errors(monkeypatch, args, message):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(CommandError, match=message):
        call_command("chat", *args, stdout=io.StringIO())


def test_slash_commands_are_answered_without_the_model(monkeypatch):
    output = chat(
        monkeypatch,
        "/help\n/state\n/drafts\nhelp\n/bogus\n/quit\nmake the music more upbeat\n",
        "--brief",
        "Coffee shop",
        "--language",
        "th",
    )

    assert output.count("/activate KIND VERSION  make a version live") == 2  # /help, help
    assert "Unknown command /bogus; /help lists them." in output
    assert output.count("Drafts now:") == 2  # after the generation, and /state
    assert "music:\n  v1    draft     Music (" in output
    # Only the brief reached the model: not the commands, nor the line after /quit.
    assert Run.objects.count() == 1
    assert len(user_messages()) == 1 and user_messages()[0].startswith("Brief")
    assert Draft.objects.filter(kind="music").count() == 1


def test_drafts_lists_every_version_newest_first_with_its_status(monkeypatch, staff_user):
    output = chat(
        monkeypatch,
        "make the music more upbeat\n/activate music v1\n/drafts\n",
        "--brief",
        "Coffee shop",
        "--language",
        "th",
    )

    listing = output.split("Activated music v1.\n")[1]
    assert listing.index("  v2    draft     Music (") < listing.index("  v1    active    Music (")
    assert "sfx:\n  v1    draft     Sound effects:" in listing


def test_a_reviewer_activates_as_themselves_on_an_ad_of_their_workspace(
    monkeypatch, staff_user, reviewer
):
    chat(monkeypatch, "make the music more upbeat\n", "--brief", "Coffee shop", "--language", "th")
    ad = Ad.objects.get()
    assert ad.owner == staff_user
    with pytest.raises(CommandError, match=r"No ad with id .* that rita may see"):
        chat(monkeypatch, "/activate music v1\n", "--ad", str(ad.pk), "--user", "rita")
    Membership.objects.create(workspace=ad.workspace, user=reviewer, role=MemberRole.REVIEWER)

    output = chat(
        monkeypatch,
        "/activate music v1\n/activate music 2\n/activate voice v1\n/activate music v2\n",
        "--ad",
        str(ad.pk),
        "--user",
        "rita",
    )

    assert "Activated music v1.\n" in output
    assert "Activated music v2 (archived v1).\n" in output
    assert "Activated voices v1.\n" in output
    assert "music v2 was already active." in output
    assert statuses(ad, "music") == {"v1": DraftStatus.ARCHIVED, "v2": DraftStatus.ACTIVE}
    activations = list(Activation.objects.order_by("created_at", "id"))
    assert [(a.draft.kind, a.draft.label) for a in activations] == [
        ("music", "v1"),
        ("music", "v2"),
        ("voices", "v1"),
    ]
    assert {(a.user, a.source) for a in activations} == {(reviewer, "terminal")}


def test_a_viewer_can_neither_activate_nor_send_messages(monkeypatch, user):
    chat(monkeypatch, "", "--brief", "Coffee shop", "--language", "th")  # the superuser's ad
    ad = Ad.objects.get()
    Membership.objects.create(workspace=ad.workspace, user=user, role=MemberRole.VIEWER)
    messages = Message.objects.count()

    output = chat(
        monkeypatch,
        "/activate music v1\nmake it shorter\n",
        "--ad",
        str(ad.pk),
        "--workspace",
        ad.workspace.name,
        "--user",
        "alice",
    )

    assert (
        f"alice may not activate drafts: they are a viewer of workspace {ad.workspace}. "
        "Nothing was changed." in output
    )
    assert "alice may not send messages about this ad" in output
    assert not Activation.objects.exists()
    assert not Draft.objects.filter(status=DraftStatus.ACTIVE).exists()
    assert Message.objects.count() == messages


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("/activate lyrics v1", "Unknown kind 'lyrics': use voices, music or sfx."),
        ("/activate music v7", "This ad has no music v7; /drafts lists the versions."),
        ("/activate music latest", "'latest' is not a version: use v2 or 2."),
        ("/activate music", "Usage: /activate KIND VERSION, e.g. /activate music v2"),
    ],
)
def test_activating_what_does_not_exist_is_a_clear_message(monkeypatch, command, message):
    output = chat(monkeypatch, f"{command}\n", "--brief", "Coffee shop", "--language", "th")

    assert message in output
    assert not Activation.objects.exists()
    assert len(user_messages()) == 1  # the brief


@pytest.mark.parametrize("line", ["activate music v2", "Please ACTIVATE the music version 2."])
def test_an_activation_asked_in_plain_words_is_not_sent(monkeypatch, line):
    output = chat(
        monkeypatch,
        f"make the music more upbeat\n{line}\n",
        "--brief",
        "Coffee shop",
        "--language",
        "th",
    )

    assert "Messages to the director cannot activate drafts" in output
    assert "type: /activate music v2" in output
    assert len(user_messages()) == 2  # the brief and the upbeat request: not the activation
    assert Draft.objects.filter(kind="music").count() == 2
    assert not Activation.objects.exists()


def test_log_lines_only_with_verbose(monkeypatch, caplog):
    caplog.set_level(logging.INFO)
    chat(monkeypatch, "", "--brief", "Coffee shop", "--language", "th")
    assert [r.getMessage() for r in caplog.records if r.levelno < logging.WARNING] == []

    chat(monkeypatch, "more sound effects\n", "--ad", str(Ad.objects.get().pk), "--verbose")
    assert any(
        r.levelno == logging.INFO and "offline demo director" in r.getMessage()
        for r in caplog.records
    )


def test_ctrl_c_says_the_run_continues_in_the_background(settings, make_ad, user):
    """A run this person started and did not see finish (a worker has it)."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    ad = make_ad()
    conversation = Conversation.objects.create(ad=ad)
    run = Run.objects.create(conversation=conversation, input_text="hi", requested_by=user)
    out = io.StringIO()
    session = ChatSession(
        ad=ad, user=user, out=OutputWrapper(out), err=OutputWrapper(io.StringIO()), timeout=1
    )

    session.interrupted()

    assert out.getvalue() == (
        f"\nRun {run.pk} continues in the background; see its drafts later with --ad {ad.pk}.\n"
    )


def test_render_writes_the_scratch_track_and_prints_its_timeline(
    monkeypatch, staff_user, tmp_path, settings
):
    import soundfile

    settings.MEDIA_ROOT = tmp_path / "media"
    ogg, wav = tmp_path / "ad.ogg", tmp_path / "ad.wav"

    output = chat(
        monkeypatch,
        f"/render {ogg}\n/render {wav}\n/render {tmp_path / 'ad.mp3'}\n",
        "--brief",
        "Coffee shop",
        "--language",
        "th",
    )

    assert f"Written to {ogg}." in output and f"Written to {wav}." in output
    assert "Scratch track of voices v1, music v1, sfx v1:" in output
    for ref in ("track-0", "music", "sfx-0"):
        assert f"\n  {ref:<8} " in output
    assert "ad.mp3: a scratch track is written as .ogg or .wav." in output
    samples, rate = soundfile.read(ogg)
    assert rate == 48_000 and len(samples) / rate >= 29.9
    assert soundfile.info(wav).format == "WAV"


def test_render_of_an_ad_with_nothing_to_hear_says_so(make_ad, user, tmp_path):
    ad = make_ad()
    out = io.StringIO()
    session = ChatSession(
        ad=ad, user=user, out=OutputWrapper(out), err=OutputWrapper(io.StringIO()), timeout=1
    )

    session.render([str(tmp_path / "ad.ogg")])

    assert out.getvalue().startswith("There is nothing to render: the ad has no voices")
    assert not (tmp_path / "ad.ogg").exists()
