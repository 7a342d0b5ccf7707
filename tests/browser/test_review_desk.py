"""The admin as a reviewer uses it, in Chromium against gunicorn: a real generate + chat
(the provider scripted on the local fake server, the loop in-process), then the
transcript, a draft compared with its predecessor, its activation with the button, the
activation on the ad, nothing editable, and lists that fit a laptop. Each page is saved
as a screenshot under var/test-output/<test>/ for a person to look at."""

from __future__ import annotations

import pytest
from django.utils import timezone

from conversations.models import Conversation, Run, RunEvent
from conversations.run_request import RunRequest
from conversations.services import brief_send, send_message
from drafts.models import Activation, Draft
from drafts.reviewers import REVIEWERS
from drafts.services import draft_activate, draft_create
from testbed.fake_openai import call, turn
from tests.conversations.story import first_turn, run_of
from tests.support.browser import log_in, loopback_visit, make_staff
from tests.support.versions import music
from workspaces.models import Membership
from workspaces.roles import MemberRole

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
    generation = run_of(brief_send(request=RunRequest(ad=ad)))
    chat = run_of(
        send_message(
            request=RunRequest(conversation=generation.conversation, text="more upbeat music")
        )
    )
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
    Membership.objects.create(workspace=ad.workspace, user=rita, role=MemberRole.REVIEWER)
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


@pytest.mark.django_db(transaction=True)
def test_the_desk_compares_with_what_is_live_folds_streamed_text_and_fits_a_laptop(
    chromium, server, screenshot, make_ad, make_voice
):
    rita = make_staff("rita", groups=(REVIEWERS,))
    ad = make_ad(language="en", title="A long campaign title that goes on and on, " * 4)
    Membership.objects.create(workspace=ad.workspace, user=rita, role=MemberRole.REVIEWER)
    long_summary = "warm acoustic pop with a gentle build, " * 6
    v1, _ = draft_create(ad=ad, version=music("warm acoustic pop " + long_summary))
    draft_activate(ad=ad, draft_id=v1.pk, by=rita)
    v2, _ = draft_create(ad=ad, version=music("upbeat synth pop, 128 bpm"))
    v3, _ = draft_create(ad=ad, version=music("warm acoustic pop " + long_summary))
    for index in range(30):
        make_voice(
            language="en",
            locale="en-US",
            name=f"Jennifer Alvarez-Whitfield {index}",
            age="middle_aged",
            style="warm, friendly, conversational",
            provider="elevenlabs",
        )
    conversation = Conversation.objects.create(ad=ad)
    run = Run.objects.create(
        conversation=conversation,
        input_text="more upbeat",
        status="succeeded",
        finished_at=timezone.now(),
    )
    words = ["Music ", "v2 ", "is ", "more ", "upbeat, "] * 10
    RunEvent.objects.bulk_create(
        [RunEvent(run=run, seq=1, type="model_call.started", data={"round": 1})]
        + [
            RunEvent(run=run, seq=2 + n, type="text", data={"delta": word})
            for n, word in enumerate(words)
        ]
        + [RunEvent(run=run, seq=52, type="run.finished", data={"status": "succeeded"})]
    )

    with loopback_visit(chromium) as visit:
        page = visit.page
        page.set_viewport_size(LAPTOP)
        log_in(page, server, "rita")

        # v3 is compared with v1, which is live, and is the same: nothing to hear.
        page.goto(f"{server}/admin/drafts/draft/{v3.pk}/change/")
        changes = page.locator(".draft-changes")
        assert "Changes from v1, the active version" in changes.inner_text()
        assert "The same content as v1: activating it changes nothing" in changes.inner_text()
        assert changes.locator("li.added, li.removed").count() == 0
        screenshot(page, "draft-against-active")
        page.click(".compare-with >> text=v2 (before)")
        changes = page.locator(".draft-changes")
        assert "Changes from v2, the version before" in changes.inner_text()
        assert (
            changes.locator("li.removed").first.inner_text().endswith("upbeat synth pop, 128 bpm")
        )

        # The confirmation's breadcrumbs are the admin's.
        page.goto(f"{server}/admin/drafts/draft/{v2.pk}/activate/")
        background = page.evaluate(
            "getComputedStyle(document.querySelector('.breadcrumbs')).backgroundColor"
        )
        assert background not in ("rgba(0, 0, 0, 0)", "transparent"), background

        # The ad links to its conversation; its owner is a name, not a link she cannot open.
        page.goto(f"{server}/admin/drafts/ad/{ad.pk}/change/")
        page.click(".ad-conversations >> text=the current one")
        assert page.url.endswith(f"/admin/conversations/conversation/{conversation.pk}/change/")
        page.goto(f"{server}/admin/drafts/ad/{ad.pk}/change/")
        assert page.locator("a[href*='/admin/auth/user/']").count() == 0

        # The run's fifty text events are the one text they made.
        page.goto(f"{server}/admin/conversations/run/{run.pk}/change/")
        texts = page.locator(".run-events tr.event-text")
        assert texts.count() == 1
        cells = texts.locator("td")
        assert cells.nth(0).inner_text() == "2\u201351"
        assert cells.nth(2).locator(".event-text").inner_text() == "".join(words)
        assert "streamed in 50 text events" in cells.nth(2).inner_text()
        assert page.locator(".run-events tr.event").count() == 3
        screenshot(page, "run-events")

        # The lists fit a laptop's screen: no scrolling sideways, rows of a few lines.
        for path in (
            "/admin/drafts/draft/",
            "/admin/drafts/ad/",
            "/admin/drafts/activation/",
            "/admin/voices/voice/",
        ):
            page.goto(f"{server}{path}")
            screenshot(page, path.strip("/").replace("/", "-"))
            fit = page.evaluate(
                """() => {
                    const box = document.querySelector('.results');
                    const rows = [...document.querySelectorAll('#result_list tbody tr')];
                    return [box.scrollWidth - box.clientWidth,
                            document.documentElement.scrollWidth - window.innerWidth,
                            Math.max(...rows.map((row) => row.getBoundingClientRect().height))];
                }"""
            )
            assert fit[0] <= 0 and fit[1] <= 0, (path, fit)
            assert fit[2] <= 70, (path, fit)  # three lines at most (they were 145-241 px)
        assert visit.aborted == []
