"""Evaluation runs in the admin, scoped to workspaces: a staff member with only the view
permission reads a run (list, page, comparison, CSV and JSON) only when every case's ad is
in a workspace they may view; of the other workspace's runs they see nothing."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from conversations.models import Conversation
from evaluations.models import EvaluationRun
from evaluations.services import evaluation_run_finish, result_record
from tests.evaluations.runs import ok
from workspaces.models import Membership, Workspace
from workspaces.roles import MemberRole

pytestmark = pytest.mark.django_db

RUNS = "/admin/evaluations/evaluationrun/"


def kept_run(model: str, cases: dict) -> EvaluationRun:
    """A run of ``cases``: name -> (conversation or None, error)."""
    run = EvaluationRun.objects.create(
        dataset_name="golden", dataset_path="evals/dev.yaml", dataset_hash="a" * 64,
        provider="openai", model=model, prompt_version="v2",
    )  # fmt: skip
    for name, (conversation, error) in cases.items():
        result_record(
            run,
            case_name=name,
            inputs={"brief": {"clientDescription": f"brief of {name}"}},
            scores={"ScriptInLanguage": ok(f"reason of {name}")},
            ad_id=str(conversation.ad_id) if conversation else "",
            conversation_id=str(conversation.pk) if conversation else "",
            error=error,
        )
    evaluation_run_finish(run, thresholds={})
    return run


@pytest.fixture
def world(django_user_model, make_ad):
    ours = Workspace.objects.create(name="Ours")
    theirs = Workspace.objects.create(name="Theirs")
    eve = django_user_model.objects.create_user("eve", password="pw", is_staff=True)
    eve.user_permissions.add(Permission.objects.get(codename="view_evaluationrun"))
    Membership.objects.create(workspace=ours, user=eve, role=MemberRole.VIEWER)

    def conversation(workspace, title):
        return Conversation.objects.create(ad=make_ad(workspace=workspace, title=title))

    ours_1, ours_2 = conversation(ours, "ours 1"), conversation(ours, "ours 2")
    theirs_1, theirs_2 = conversation(theirs, "theirs 1"), conversation(theirs, "theirs 2")
    secret = {  # what must not reach eve: their cases' ids, names, briefs, errors, reasons
        str(theirs_1.pk), str(theirs_1.ad_id), str(theirs_2.pk), str(theirs_2.ad_id),
        "their-case", "brief of their-case", "reason of their-case", "their error",
        "gpt-theirs", "gpt-mixed", "gpt-adless",
    }  # fmt: skip
    runs = {
        "ours": kept_run("gpt-ours", {"our-case": (ours_1, ""), "our-other": (ours_2, "")}),
        "theirs": kept_run(
            "gpt-theirs", {"their-case": (theirs_1, ""), "their-other": (theirs_2, "their error")}
        ),
        "mixed": kept_run("gpt-mixed", {"our-case": (ours_1, ""), "their-case": (theirs_1, "")}),
        "adless": kept_run("gpt-adless", {"our-case": (ours_1, ""), "their-case": (None, "")}),
    }
    # Ours was compared with theirs: not even that run's id may show.
    EvaluationRun.objects.filter(pk=runs["ours"].pk).update(compared_with=runs["theirs"])
    secret.add(str(runs["theirs"].pk))
    return {"eve": eve, "runs": runs, "secret": secret}


def leaks(text: str, secret: set[str]) -> set[str]:
    return {value for value in secret if value in text}


def test_the_list_holds_only_runs_wholly_in_her_workspaces(client, world):
    client.force_login(world["eve"])

    page = client.get(RUNS).content.decode()

    assert "gpt-ours" in page and "1 evaluation run" in page
    assert leaks(page, world["secret"]) == set()


def test_pages_and_exports_of_runs_not_wholly_hers_are_404(client, world):
    client.force_login(world["eve"])
    ours = world["runs"]["ours"]

    for name in ("theirs", "mixed", "adless"):
        run = world["runs"][name]
        for url in (
            f"{RUNS}{run.pk}/change/",
            f"{RUNS}{run.pk}/export.csv",
            f"{RUNS}{run.pk}/export.json",
            f"{RUNS}{run.pk}/history/",
            f"{RUNS}{run.pk}/compare/{ours.pk}/",
            f"{RUNS}{ours.pk}/compare/{run.pk}/",
        ):
            response = client.get(url, follow=True)
            assert response.status_code == 404 or response.redirect_chain, url
            # The id asked for may be said back ("... doesn't exist"); nothing else.
            assert leaks(response.content.decode(), world["secret"] - {str(run.pk)}) == set(), url


def test_her_own_runs_page_and_exports_show_nothing_of_the_other_workspace(client, world):
    client.force_login(world["eve"])
    ours = world["runs"]["ours"]

    page = client.get(f"{RUNS}{ours.pk}/change/")
    as_csv = client.get(f"{RUNS}{ours.pk}/export.csv")
    as_json = client.get(f"{RUNS}{ours.pk}/export.json")

    assert page.status_code == as_csv.status_code == as_json.status_code == 200
    assert "our-case" in page.content.decode() and "our-other" in as_csv.content.decode()
    assert [c["case"] for c in as_json.json()["cases"]] == ["our-case", "our-other"]
    assert as_json.json()["comparedWith"] is None
    for response in (page, as_csv, as_json):
        assert leaks(response.content.decode(), world["secret"]) == set()


def test_comparing_two_selected_runs_takes_only_hers(client, world):
    client.force_login(world["eve"])
    runs = world["runs"]

    chosen = client.post(
        RUNS,
        {
            "action": "compare_two",
            "_selected_action": [str(runs["ours"].pk), str(runs["theirs"].pk)],
        },
    )

    assert chosen.status_code == 302 and "/compare/" not in chosen.url  # one run: none compared


def test_a_superuser_reads_every_run(client, world, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="pw")
    client.force_login(root)

    page = client.get(RUNS).content.decode()
    export = client.get(f"{RUNS}{world['runs']['mixed'].pk}/export.json").json()

    assert all(f"gpt-{name}" in page for name in ("ours", "theirs", "mixed", "adless"))
    assert {c["case"] for c in export["cases"]} == {"our-case", "their-case"}


def test_a_member_of_both_workspaces_reads_the_mixed_run(client, world):
    theirs = Workspace.objects.get(name="Theirs")
    Membership.objects.create(workspace=theirs, user=world["eve"], role=MemberRole.VIEWER)
    client.force_login(world["eve"])

    page = client.get(RUNS).content.decode()

    assert "gpt-mixed" in page and "gpt-theirs" in page
    assert "gpt-adless" not in page  # a case with no ad is in no workspace
