"""A reviewer hears the ad, in Chromium against gunicorn and the shared worker: the draft
page's button asks for the scratch track, the worker renders it, the page plays it to the
end and draws its timeline under the player, without the page being reloaded."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from drafts.reviewers import REVIEWERS
from drafts.services import draft_create
from providers.demo_lines import LINES
from tests.support.browser import log_in, loopback_visit, make_staff
from tests.support.versions import music, sfx, voices
from workspaces.models import Membership
from workspaces.roles import MemberRole


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_renders_and_hears_a_draft(chromium, server, screenshot, make_ad):
    rita = make_staff("rita", groups=(REVIEWERS,))
    ad = make_ad(language="th", duration_s=6, title="Short spot, TH")
    Membership.objects.create(workspace=ad.workspace, user=rita, role=MemberRole.REVIEWER)
    draft, _ = draft_create(ad=ad, version=voices(LINES["th"].calm[0], LINES["th"].calm[2]))
    draft_create(ad=ad, version=music("calm pad at 80 bpm", duration=6))
    draft_create(ad=ad, version=sfx("chime"))

    with loopback_visit(chromium) as visit:
        page = visit.page
        log_in(page, server, "rita")
        page.goto(f"{server}/admin/drafts/draft/{draft.pk}/change/")
        # Priced before it is asked for: no speech provider is configured, so nothing.
        expect(page.locator(".scratch-estimate").first).to_contain_text("Speech: 0 characters")
        page.get_by_role("button", name="Render the scratch track").click()
        page.wait_for_url(f"**/admin/drafts/draft/{draft.pk}/change/")
        expect(page.get_by_role("status")).to_contain_text("Rendering")
        # The worker renders it; the page shows the player by itself, never reloaded.
        page.evaluate("window.notReloaded = true")
        page.locator(".scratch-player audio").wait_for(timeout=30_000)
        assert page.evaluate("window.notReloaded") is True
        screenshot(page, "draft-with-player")

        # Who read each line and made the music, drawn by the page's script with the player.
        readers = page.locator(".scratch-readers li")
        expect(readers).to_have_count(3)
        expect(readers.first).to_contain_text("track-0: guide voice")
        expect(readers.last).to_have_text("music: placeholder bed: Loudly not connected")

        bars = page.locator(".scratch-timeline .bar")
        assert bars.count() == 4  # two lines, the music, the chime
        assert "track-1" in bars.nth(1).get_attribute("title")
        ended = page.evaluate(
            """() => new Promise((resolve, reject) => {
                const audio = document.querySelector('.scratch-player audio');
                audio.addEventListener('ended', () => resolve(audio.duration));
                audio.addEventListener('error', () => reject(audio.error && audio.error.code));
                audio.playbackRate = 4;
                audio.muted = true;
                audio.play().catch(reject);
            })"""
        )
        assert 5.5 < ended < 8.0  # the 6 s slot (and whatever speech runs past it)
