"""The Content-Security-Policy in Chromium against gunicorn: the admin's login, a
conversation with model output, the review desk's player and Swagger UI work with no
violation reported; and markup from a brief or a model, were it ever to reach the page
unescaped, runs nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Page, expect

from conversations.run_request import RunRequest
from conversations.services import brief_send
from drafts.reviewers import REVIEWERS
from drafts.services import draft_create
from providers.demo_lines import LINES
from testbed.fake_openai import call, turn
from tests.conversations.story import run_of
from tests.support.browser import Visit, log_in, loopback_visit, make_staff
from tests.support.versions import music, sfx, voices
from workspaces.models import Membership
from workspaces.roles import MemberRole

BRIEF_SCRIPT = "<script>window.pwned='brief'</script>"
TITLE_IMG = "<img src=x onerror=\"window.pwned='title'\">"
TOOL_SCRIPT = "<script>window.pwned='tool'</script> warm pop"
REPLY_IMG = "<img src=x onerror=\"window.pwned='reply'\"> Music v1 is ready."

# Every violation the page reports, kept across its navigations (an init script runs
# before the page's own, and CSP does not apply to it).
LISTEN = """
document.addEventListener('securitypolicyviolation', (e) => {
  const seen = JSON.parse(sessionStorage.getItem('csp') || '[]');
  seen.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
  sessionStorage.setItem('csp', JSON.stringify(seen));
});
"""


@contextmanager
def watched(chromium) -> Iterator[tuple[Visit, list[str]]]:
    """A loopback-only page whose CSP violations, from events and from the console, are
    collected in the list yielded with it."""
    with loopback_visit(chromium) as visit:
        refused: list[str] = []
        visit.page.add_init_script(LISTEN)
        visit.page.on(
            "console",
            lambda message: (
                refused.append(message.text) if "Content Security Policy" in message.text else None
            ),
        )
        yield visit, refused


def violations(page: Page, console: list[str]) -> list[str]:
    return [*page.evaluate("JSON.parse(sessionStorage.getItem('csp') || '[]')"), *console]


@pytest.mark.django_db(transaction=True)
def test_the_admin_login_works_with_no_violation(chromium, server):
    make_staff("csp-staff", superuser=True)

    with watched(chromium) as (visit, console):
        response = visit.page.goto(f"{server}/admin/login/")
        assert "script-src 'self' 'nonce-" in response.headers["content-security-policy"]
        log_in(visit.page, server, "csp-staff")

        assert visit.page.get_by_text("Review desk").count() >= 1
        assert violations(visit.page, console) == []


@pytest.fixture
def injected_conversation(fake_providers, make_ad):
    """A brief and a model's tool arguments and reply that each carry markup."""
    ad = make_ad(language="en", market="US", title=TITLE_IMG, context=BRIEF_SCRIPT)
    fake_providers.script(
        turn(tool_calls=[call("create_music_draft", {"prompt": TOOL_SCRIPT})]),
        turn(REPLY_IMG),
    )
    run = run_of(brief_send(request=RunRequest(ad=ad)))
    assert run.status == "succeeded", run.error_message
    return run.conversation


@pytest.mark.django_db(transaction=True)
def test_model_output_in_the_admin_is_shown_as_text_and_runs_nothing(
    chromium, server, injected_conversation
):
    make_staff("csp-root", superuser=True)
    conversation_page = (
        f"{server}/admin/conversations/conversation/{injected_conversation.pk}/change/"
    )
    ad_page = f"{server}/admin/drafts/ad/{injected_conversation.ad.pk}/change/"

    with watched(chromium) as (visit, console):
        page = visit.page
        log_in(page, server, "csp-root")
        for url in (conversation_page, ad_page):
            page.goto(url, wait_until="networkidle")
            assert page.evaluate("window.pwned") is None, url
        page.goto(conversation_page, wait_until="networkidle")
        text = page.locator("body").inner_text()
        assert "window.pwned='tool'" in text  # the tool's arguments, as text
        assert "Music v1 is ready." in text
        assert violations(page, console) == []

        # Were escaping ever to fail, the same markup placed in the page runs nothing:
        # neither an inline handler nor a script element without the page's nonce.
        page.evaluate("(html) => document.body.insertAdjacentHTML('beforeend', html)", REPLY_IMG)
        with pytest.raises(Exception, match=r"Content Security Policy|CSP"):
            page.add_script_tag(content="window.pwned='script'")
        page.wait_for_function("JSON.parse(sessionStorage.getItem('csp') || '[]').length >= 2")

        assert page.evaluate("window.pwned") is None
        refused = violations(page, console)
        assert any(v.startswith("script-src-attr inline") for v in refused), refused
        assert any(v.startswith("script-src-elem inline") for v in refused), refused


@pytest.mark.django_db(transaction=True)
def test_the_review_desk_player_works_with_no_violation(chromium, server, make_ad):
    rita = make_staff("csp-rita", groups=(REVIEWERS,))
    ad = make_ad(language="th", duration_s=6, title="Short spot, TH")
    Membership.objects.create(workspace=ad.workspace, user=rita, role=MemberRole.REVIEWER)
    draft, _ = draft_create(ad=ad, version=voices(LINES["th"].calm[0], LINES["th"].calm[2]))
    draft_create(ad=ad, version=music("calm pad at 80 bpm", duration=6))
    draft_create(ad=ad, version=sfx("chime"))

    with watched(chromium) as (visit, console):
        page = visit.page
        log_in(page, server, "csp-rita")
        page.goto(f"{server}/admin/drafts/draft/{draft.pk}/change/")
        page.get_by_role("button", name="Render the scratch track").click()
        page.wait_for_url(f"**/admin/drafts/draft/{draft.pk}/change/")
        expect(page.get_by_role("status")).to_contain_text("Rendering")
        # The player's script polls the render and draws the player: it ran.
        page.locator(".scratch-player audio").wait_for(timeout=30_000)
        assert page.locator(".scratch-timeline .bar").count() == 4

        # Loaded again, rendered by the server: its <style> (nonce) and the bars' style
        # attributes apply.
        page.reload(wait_until="networkidle")
        second = page.locator(".scratch-timeline .bar").nth(1)
        assert second.evaluate("e => getComputedStyle(e).position") == "absolute"
        assert second.evaluate("e => e.style.left") not in ("", "0%")
        assert violations(page, console) == []


@pytest.mark.django_db(transaction=True)
def test_swagger_ui_renders_with_no_violation(chromium, server):
    with watched(chromium) as (visit, console):
        response = visit.page.goto(f"{server}/api/docs/", wait_until="networkidle")
        assert "content-security-policy" in response.headers

        visit.page.wait_for_selector(".opblock", timeout=20_000)
        assert visit.page.get_by_text("/api/ai/generate", exact=True).count() >= 1
        assert violations(visit.page, console) == []
