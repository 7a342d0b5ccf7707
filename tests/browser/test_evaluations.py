"""Evaluation runs as staff read them, in Chromium against gunicorn: two runs compared,
the regression marked and first, the transcript one click away; the run's own table."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from conversations.models import Conversation
from drafts.reviewers import REVIEWERS
from tests.evaluations.runs import before_and_after
from tests.support.browser import log_in, loopback_visit, make_staff
from workspaces.models import Membership
from workspaces.roles import MemberRole

LAPTOP = {"width": 1366, "height": 768}


@pytest.mark.django_db(transaction=True)
def test_two_runs_compared_show_what_regressed(chromium, server, screenshot, make_ad):
    eve = make_staff("eve", groups=(REVIEWERS,))  # who reads transcripts
    eve.user_permissions.add(Permission.objects.get(codename="view_evaluationrun"))
    ad = make_ad(title="Family plan, TH")
    Membership.objects.create(workspace=ad.workspace, user=eve, role=MemberRole.REVIEWER)
    conversation = Conversation.objects.create(ad=ad)
    # Every case in a workspace eve reads: a run is shown whole or not at all.
    before, after = before_and_after({"th-30": conversation, "de-15": conversation})

    with loopback_visit(chromium) as visit:
        page = visit.page
        page.set_viewport_size(LAPTOP)
        log_in(page, server, "eve")

        page.goto(f"{server}/admin/evaluations/evaluationrun/")
        page.locator(f'input[name="_selected_action"][value="{before.pk}"]').check()
        page.locator(f'input[name="_selected_action"][value="{after.pk}"]').check()
        page.select_option('select[name="action"]', "compare_two")
        page.click('button[name="index"]')
        page.wait_for_url(f"**/evaluationrun/{after.pk}/compare/{before.pk}/")
        screenshot(page, "compare")

        assert page.locator("#regressions").inner_text() == "1 case regressed."
        first = page.locator("#cases tbody tr").first
        assert "regressed" in first.get_attribute("class")
        assert first.inner_text().startswith("REGRESSED th-30")
        cell = first.locator("td.regressed")
        assert cell.inner_text().strip() == "pass → fail"
        assert "written in en (p=0.97)" in cell.get_attribute("title")
        summary = page.locator("#summary tbody tr", has_text="ScriptInLanguage")
        assert summary.locator("td").all_inner_texts() == ["ScriptInLanguage", "100%", "50% ▼"]

        first.get_by_role("link", name="after").click()
        page.wait_for_url(f"**/conversation/{conversation.pk}/change/")
        assert "Family plan, TH" in page.content()

        page.goto(f"{server}/admin/evaluations/evaluationrun/{after.pk}/change/")
        screenshot(page, "run")
        rows = page.locator("#scores tbody tr")
        assert rows.first.locator("td.case").inner_text().startswith("th-30")
        assert "written in en" in rows.first.locator("td.fail").last.inner_text()
