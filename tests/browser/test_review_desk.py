"""The admin as a reviewer uses it, in Chromium against gunicorn: a real generate + chat
(the provider scripted on the local fake server, the loop in-process), then the
transcript, a draft compared with its predecessor, its activation with the button, the
activation on the ad, nothing editable, and lists that fit a laptop. Each page is saved
as a screenshot under var/test-output/<test>/ for a person to look at."""

from __future__ import annotations

import pytest

from conversations.models import Conversation, Run
from conversations.services import send_message, start_generation
from drafts.models import Activation, Draft
from drafts.reviewers import REVIEWERS
from drafts.services import draft_create
from tests.conversations.story import first_turn, run_of
from tests.fakes.server import call, turn
from tests.support.browser import log_in, loopback_visit, make_staff
from tests.support.versions import music
from workspaces.models import Membership
from workspaces.roles import Role

LAPTOP = {"width": 1366, "height": 768}


@pytest.fixture
def conversation(fake_providers, make_ad, make_voice):
    """Generate, then a chat whose first tool call fails (an unknown voice) before the
    music v2 it asked for."""
    voices = [
        make_voice(language="en", gender="male", name="Jack", style="upbeat"),
        make_voice(language="en", gender="female", name="Rachel", style="calm"),
    ]
    ad = make_ad(language="en", market="US", title="Family plan, US")
    fake_providers.script(
        *first_turn(voices, turn),
        turn(
            tool_calls=[call("create_voice_draft", {"tracks": [{"voiceId": "999", "text": "Hi"}]})]
        ),
        turn(tool_calls=[call("create_music_draft", {"prompt": "upbeat pop, 120 bpm"})]),
        turn("Music v2 is more upbeat, at 120 bpm."),
    )
    generation = run_of(start_generation(ad=ad))
    chat = run_of(send_message(conversation=generation.conversation, text="more upbeat music"))
    assert (generation.status, chat.status) == ("succeeded", "succeeded")
    return chat.conversation


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_reads_compares_and_activates(
    chromium, server, conversation, screenshot, other_user, make_ad
):
    rita = make_staff("rita", groups=(REVIEWERS,))
    ad = conversation.ad
    # Rita reviews the workspace of this ad; another agency's ad, with a draft and a
    # conversation of its own, is in a workspace she is not in.
    Membership.objects.create(workspace=ad.workspace, user=rita, role=Role.REVIEWER)
    theirs = make_ad(owner=other_user, title="Their secret launch")
    draft_create(ad=theirs, version=music("their secret jingle"))
    Conversation.objects.create(ad=theirs)
    music_v2 = Draft.objects.get(ad=ad, kind="music", version=2)
    runs = list(Run.objects.filter(conversation=conversation).order_by("created_at"))

    with loopback_visit(chromium) as visit:
        page = visit.page
        page.set_viewport_size(LAPTOP)
        log_in(page, server, "rita")

        # The draft, compared with v1; then activated with its button, after a confirmation.
        page.goto(f"{server}/admin/drafts/draft/{music_v2.pk}/change/")
        assert page.locator(".draft-content").inner_text().count("upbeat pop, 120 bpm") == 1
        changes = page.locator(".draft-changes")
        assert "Changes from v1" in changes.inner_text()
        assert (
            changes.locator("li.removed")
            .first.inner_text()
            .endswith("prompt: warm acoustic pop, 95 bpm")
        )
        assert (
            changes.locator("li.added").first.inner_text().endswith("prompt: upbeat pop, 120 bpm")
        )
        assert page.locator("input[name=_save]").count() == 0
        screenshot(page, "draft")

        page.click("text=Activate music v2")
        assert "This archives:\n\nmusic v1 (never activated)" in page.inner_text("#content-main")
        screenshot(page, "activate-confirmation")
        page.click("input[type=submit]")
        assert "Activated music v2 (archived v1)." in page.inner_text(".messagelist")

        # The ad: a panel per kind, the activation recorded with who did it.
        page.goto(f"{server}/admin/drafts/ad/{ad.pk}/change/")
        music_panel = page.locator(".draft-panel", has_text="Music")
        assert "Active: v2" in music_panel.inner_text()
        activations = page.locator(".ad-activations").inner_text()
        assert "music v2" in activations and "rita" in activations
        assert page.locator("input[name=_save]").count() == 0
        screenshot(page, "ad")

        # The conversation as a transcript: two runs, their turns in order, the tool calls
        # as cards with only the failed one marked.
        page.goto(f"{server}/admin/conversations/conversation/{conversation.pk}/change/")
        text = page.locator(".transcript").inner_text()
        assert text.index("more upbeat music") < text.index("Music v2 is more upbeat, at 120 bpm.")
        assert page.locator(".run-header").count() == 2
        assert "Drafts: music v2" in page.locator(".run-header").nth(1).inner_text()
        failed = page.locator(".tool-card.error")
        assert failed.count() == 1
        assert "create_voice_draft" in failed.inner_text()
        assert page.locator(".tool-card:not(.error) .error-badge").count() == 0
        assert page.locator(".tool-card").count() > 1
        screenshot(page, "conversation")

        # The lists fit a laptop's screen, with the provider the runs used.
        for path in ("/admin/conversations/run/", "/admin/conversations/conversation/"):
            page.goto(f"{server}{path}")
            screenshot(page, path.strip("/").replace("/", "-"))
            # The table neither overflows the page nor scrolls inside its own box.
            overflow = page.evaluate(
                """() => {
                    const box = document.querySelector('.results');
                    return [box.scrollWidth - box.clientWidth,
                            document.documentElement.scrollWidth - window.innerWidth];
                }"""
            )
            assert overflow[0] <= 0 and overflow[1] <= 0, (path, overflow)
        assert "- / -" not in page.locator("#result_list").inner_text()

        # Nothing of the other workspace shows in any list, search or page of hers.
        for path in (
            "/admin/drafts/ad/",
            "/admin/drafts/draft/",
            "/admin/drafts/activation/",
            "/admin/conversations/conversation/",
            "/admin/conversations/run/",
            "/admin/workspaces/workspace/",
            "/admin/drafts/ad/?q=secret",
            "/admin/drafts/draft/?q=secret",
        ):
            page.goto(f"{server}{path}")
            assert "secret" not in page.inner_text("#content").lower(), path
        page.goto(f"{server}/admin/drafts/ad/{theirs.pk}/change/")
        assert "exist" in page.inner_text(".messagelist"), "another workspace's ad"

        # Nothing can be changed: the change and delete pages are refused.
        for path in (
            f"/admin/drafts/ad/{ad.pk}/delete/",
            f"/admin/conversations/run/{runs[0].pk}/delete/",
            "/admin/drafts/ad/add/",
        ):
            assert page.goto(f"{server}{path}").status == 403, path

        assert visit.failures() == [
            (403, "document", f"{server}{path}")
            for path in (
                f"/admin/drafts/ad/{ad.pk}/delete/",
                f"/admin/conversations/run/{runs[0].pk}/delete/",
                "/admin/drafts/ad/add/",
            )
        ]
        assert visit.aborted == []

    activation = Activation.objects.get()
    assert (activation.draft_id, activation.user.username) == (music_v2.pk, "rita")
