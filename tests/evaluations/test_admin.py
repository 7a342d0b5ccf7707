"""Evaluation runs in the admin: for those with the permission only; a run's cases by score
with failures first and links to transcripts; two runs compared with the regression
marked; CSV and JSON exports."""

from __future__ import annotations

import csv
import html
import io

import pytest
import yaml
from django.contrib.auth.models import Permission

from conversations.models import Conversation
from tests.evaluations.runs import before_and_after
from workspaces.models import Membership, Workspace
from workspaces.roles import MemberRole

pytestmark = pytest.mark.django_db


@pytest.fixture
def evaluator(django_user_model):
    user = django_user_model.objects.create_user("eve", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_evaluationrun"))
    return user


@pytest.fixture
def runs(make_ad, evaluator):
    """Two runs whose cases' ads are in a workspace the evaluator views (runs of other
    workspaces: tests/evaluations/test_admin_scoping.py)."""
    workspace = Workspace.objects.create(name="Evaluations")
    Membership.objects.create(workspace=workspace, user=evaluator, role=MemberRole.VIEWER)
    conversations = {
        name: Conversation.objects.create(ad=make_ad(workspace=workspace, title=name))
        for name in ("th-30", "de-15")
    }
    return before_and_after(conversations)


def test_being_staff_is_not_enough(client, django_user_model, runs):
    before, _ = runs
    staff = django_user_model.objects.create_user("sam", password="pw", is_staff=True)
    client.force_login(staff)
    for url in (
        "/admin/evaluations/evaluationrun/",
        f"/admin/evaluations/evaluationrun/{before.pk}/change/",
        f"/admin/evaluations/evaluationrun/{before.pk}/export.csv",
        f"/admin/evaluations/evaluationrun/{runs[1].pk}/compare/{before.pk}/",
        "/admin/evaluations/evaluationrun/golden-case/",
    ):
        assert client.get(url).status_code == 403, url
    compared = client.post(
        "/admin/evaluations/evaluationrun/",
        {"action": "compare_two", "_selected_action": [str(r.pk) for r in runs]},
    )
    assert compared.status_code == 403


def test_a_runs_table_puts_failures_first_and_links_transcripts(client, evaluator, runs):
    _, after = runs
    client.force_login(evaluator)

    page = client.get(f"/admin/evaluations/evaluationrun/{after.pk}/change/").content.decode()

    assert page.index("th-30") < page.index("de-15")  # the failed case first
    assert "written in en (p=0.97), the ad is th" in page
    conversation = after.results.get(case_name="th-30").conversation_id
    assert f"/admin/conversations/conversation/{conversation}/change/" in page
    listing = client.get("/admin/evaluations/evaluationrun/").content.decode()
    assert "50% of 2" in listing and "100% of 2" in listing


def test_two_runs_side_by_side_mark_the_regression(client, evaluator, runs):
    before, after = runs
    client.force_login(evaluator)

    chosen = client.post(
        "/admin/evaluations/evaluationrun/",
        {"action": "compare_two", "_selected_action": [str(before.pk), str(after.pk)]},
    )
    assert chosen.status_code == 302
    assert chosen.url == f"/admin/evaluations/evaluationrun/{after.pk}/compare/{before.pk}/"
    page = client.get(chosen.url).content.decode()

    assert "1 case regressed." in page
    assert page.index("REGRESSED") < page.index("th-30") < page.index("de-15")
    assert "5000 → 4200" in page  # a number's change
    assert '100%</td><td class="regressed">50% ▼' in page.replace("\n", "")


def test_a_run_exports_as_csv_and_json(client, evaluator, runs):
    _, after = runs
    client.force_login(evaluator)

    csv_text = client.get(
        f"/admin/evaluations/evaluationrun/{after.pk}/export.csv"
    ).content.decode()
    rows = list(csv.DictReader(io.StringIO(csv_text)))
    as_json = client.get(f"/admin/evaluations/evaluationrun/{after.pk}/export.json").json()

    assert [(r["case"], r["passed"], r["ScriptInLanguage"]) for r in rows] == [
        ("de-15", "True", "True"),
        ("th-30", "False", "False"),
    ]
    assert rows[1]["ScriptInLanguage reason"] == "written in en (p=0.97), the ad is th"
    assert as_json["model"] == "gpt-b" and as_json["summary"]["ScriptInLanguage"]["passRate"] == 0.5
    assert [c["case"] for c in as_json["cases"]] == ["de-15", "th-30"]
    assert client.get(f"/admin/evaluations/evaluationrun/{after.pk}/export.xml").status_code == 404


def test_a_conversation_becomes_a_golden_case_once_its_direction_is_said(
    client, evaluator, make_ad, tmp_path, django_user_model
):
    from conversations.run_request import RunRequest
    from conversations.services import brief_send, send_message
    from drafts.services import draft_create
    from evaluations.datasets import InvalidGoldenSet, golden_set
    from tests.support.versions import music

    ad = make_ad(title="Family plan", language="th", market="TH", duration_s=30)
    first = brief_send(request=RunRequest(ad=ad))
    second = send_message(
        request=RunRequest(conversation=first.conversation, text="Make the music calmer")
    )
    draft_create(ad=ad, version=music("calm piano"), run_id=second.pk, tool_call_id="1:c")
    client.force_login(evaluator)
    url = f"/admin/evaluations/evaluationrun/golden-case/?conversation={first.conversation_id}"

    assert "No conversation" in client.get(url).content.decode()  # not in her workspace
    Membership.objects.create(workspace=ad.workspace, user=evaluator, role=MemberRole.VIEWER)
    page = client.get(url).content.decode()

    start = page.index('<pre id="case">') + len('<pre id="case">')
    case = html.unescape(page[start : page.index("</pre>", start)])
    assert "clientDescription: Spotify Premium family plan" in case
    assert "message: Make the music calmer" in case and "- music" in case
    path = tmp_path / "set.yaml"
    path.write_text("name: mine\ncases:\n" + case)
    with pytest.raises(InvalidGoldenSet, match=r"refinement\.direction"):
        golden_set(path)
    (filled,) = yaml.safe_load(case)
    filled["inputs"]["refinement"]["direction"] = "music_calmer"  # what a person says
    path.write_text(yaml.safe_dump({"name": "mine", "cases": [filled]}, allow_unicode=True))
    (loaded,) = golden_set(path).cases
    assert loaded.inputs.refinement.direction == "music_calmer"
    assert loaded.inputs.brief.durationSeconds == 30
