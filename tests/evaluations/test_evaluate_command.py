"""``manage.py evaluate``: a golden set through the real loop (in-process, and through a
real worker), kept as an evaluation run with a result per case; its exit statuses; the
cost guard that refuses a run before anything is made."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from conversations.models import Conversation, Run
from drafts.models import Ad
from evaluations.datasets import golden_set_hash
from evaluations.models import EvaluationResult, EvaluationRun
from renders.models import Render
from testbed.fake_openai import call, turn

ROOT = Path(__file__).resolve().parents[2]
PASS_FAIL_NAMES = {
    "RunsSucceeded",
    "AllKindsDrafted",
    "CleanToolCalls",
    "VoicesInLanguage",
    "ScriptInLanguage",
    "ScriptFitsSlot",
    "music_instrumental",
    "music_length",
    "SfxInsideAd",
    "SfxUnderSpeech",
}
NUMBERS = {"tokens", "cost_usd", "latency_s", "rounds"}


@pytest.fixture
def small_set(tmp_path) -> Path:
    """Two cases of the golden set: a first turn and a refinement."""
    golden = yaml.safe_load((ROOT / "evals/dev.yaml").read_text())
    wanted = {"th-streaming-family-30", "th-streaming-family-30-upbeat-music"}
    cases = [case for case in golden["cases"] if case["name"] in wanted]
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump({"name": "small", "cases": cases}, allow_unicode=True))
    return path


@pytest.fixture
def catalogue(transactional_db):
    call_command(
        "import_voices",
        str(ROOT / "voices/fixtures/sample_catalogue.json"),
        "--approve",
        verbosity=0,
    )


def evaluate(*args: str) -> str:
    out = StringIO()
    call_command("evaluate", *args, stdout=out)
    return out.getvalue()


def assert_kept(run: EvaluationRun, dataset: Path) -> None:
    assert run.status == "finished" and run.finished_at is not None
    assert (run.dataset_name, run.dataset_hash) == ("small", golden_set_hash(dataset))
    assert run.model == "demo-director" and run.prompt_version
    results = {r.case_name: r for r in EvaluationResult.objects.filter(run=run)}
    assert set(results) == {"th-streaming-family-30", "th-streaming-family-30-upbeat-music"}
    first, refined = (
        results["th-streaming-family-30"],
        results["th-streaming-family-30-upbeat-music"],
    )
    assert set(first.scores) == PASS_FAIL_NAMES | NUMBERS  # no refinement scores: not asked
    assert set(refined.scores) == PASS_FAIL_NAMES | NUMBERS | {
        "RefinementScope",
        "RefinementDirection",
    }
    assert all(isinstance(s["reason"], str) for s in first.scores.values())
    assert first.passed == all(
        s["value"] for s in first.scores.values() if isinstance(s["value"], bool)
    )
    for result in results.values():  # each links to the conversation its runs made
        conversation = Conversation.objects.get(pk=result.conversation_id)
        assert conversation.ad_id == result.ad_id
        assert Ad.objects.get(pk=result.ad_id).language == "th"
    assert Run.objects.filter(conversation_id=refined.conversation_id).count() == 2
    assert run.summary["RunsSucceeded"] == {"passRate": 1.0, "cases": 2}
    assert run.summary["RefinementScope"]["cases"] == 1


def test_a_set_runs_in_process_and_is_kept(catalogue, small_set):
    out = evaluate("--dataset", str(small_set), "--require", "RunsSucceeded=1")

    run = EvaluationRun.objects.get()
    assert_kept(run, small_set)
    assert run.thresholds == {"RunsSucceeded": 1.0} and run.thresholds_met is True
    assert "[2/2]" in out and "RunsSucceeded" in out


@pytest.mark.worker
def test_a_set_runs_through_a_real_worker(worker, catalogue, small_set):
    evaluate("--dataset", str(small_set), "--provider", "demo", "--timeout", "60")

    run = EvaluationRun.objects.get()
    assert run.provider == "demo"
    assert_kept(run, small_set)
    assert all(r.status == "succeeded" for r in Run.objects.all())


def test_a_missed_threshold_exits_1_and_a_comparison_lists_what_changed(catalogue, small_set):
    evaluate("--dataset", str(small_set))
    first = EvaluationRun.objects.get()
    with pytest.raises(CommandError) as missed:
        evaluate(
            "--dataset", str(small_set), "--compare", str(first.pk), "--require", "Nothing=0.5"
        )
    assert missed.value.returncode == 1
    assert "Nothing: no pass/fail result of that name" in str(missed.value)
    second = EvaluationRun.objects.exclude(pk=first.pk).get()
    assert second.compared_with == first and second.thresholds_met is False


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--require", "ScriptInLanguage=2"], "expected [SET:]NAME=RATE"),
        (["--require", ":all=1"], "expected [SET:]NAME=RATE"),
        (["--require", "held_out:all=1"], "--require held_out:...: no set of that name"),
        (["--model", "gpt-4.1"], "--model needs --provider"),
        (["--compare", "not-a-run"], "no such evaluation run"),
        (["--max-cost", "lots"], "expected an amount in USD"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--owner", "nobody"], "--owner 'nobody': no such user"),
        (["--replay", "/nowhere/recorded.json"], "--replay /nowhere/recorded.json: [Errno 2]"),
        (["--record", "/nowhere/r.json"], "--record /nowhere/r.json: /nowhere is not a folder"),
        (["--replay", "r.json", "--provider", "demo"], "drop --provider, --model and --judge"),
        (["--judge", "openai"], "--judge openai: provider 'openai' has no API key"),
    ],
)
def test_bad_options_exit_2_and_nothing_is_run(db, small_set, args, says):
    with pytest.raises(CommandError) as refused:
        evaluate("--dataset", str(small_set), *args)
    assert refused.value.returncode == 2 and says in str(refused.value)
    assert not EvaluationRun.objects.exists() and not Ad.objects.exists()


def test_a_bad_set_names_the_case_and_field(db, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: bad\ncases:\n- name: one\n  inputs:\n    brief: {language: th}\n")
    with pytest.raises(CommandError) as refused:
        evaluate("--dataset", str(path))
    assert refused.value.returncode == 2
    assert "case 'one': inputs.brief.clientDescription: Field required" in str(refused.value)


def test_the_cost_guard_refuses_a_run_estimated_over_it(db, small_set, settings):
    settings.ADSTUDIO_PROVIDERS = {
        **settings.ADSTUDIO_PROVIDERS,
        "openai": {"api_key": "sk-test", "base_url": "http://127.0.0.1:9/v1", "model": "gpt-4.1"},
    }
    settings.ADSTUDIO_MODEL_PRICES = {"gpt-4.1": {"input": 2.0, "cached_input": 0.5, "output": 8.0}}
    with pytest.raises(CommandError) as refused:
        evaluate("--dataset", str(small_set), "--provider", "openai", "--max-cost", "0.01")
    # 3 turns x (9,000 x $2 + 1,200 x $8) per million tokens = $0.0828
    assert refused.value.returncode == 2
    assert "estimated cost $0.0828 is over --max-cost $0.01: nothing was run" in str(refused.value)
    assert not EvaluationRun.objects.exists() and not Ad.objects.exists()


def test_the_demo_director_passes_dev_and_the_held_out_set(catalogue):
    """The offline gate, each part of the golden set with its own bar: every case of the
    dev part (tuned to) and 90% of the held-out part (never tuned to), every scorer."""
    out = evaluate(
        "--dataset", str(ROOT / "evals/dev.yaml"),
        "--dataset", str(ROOT / "evals/held_out.yaml"),
        "--require", "dev:all=1",
        "--require", "held_out:cases passed=0.9",
        "--concurrency", "2",
    )  # fmt: skip

    dev = EvaluationRun.objects.get(dataset_name="dev")
    held_out = EvaluationRun.objects.get(dataset_name="held_out")
    assert dev.thresholds == {"all": 1.0} and dev.thresholds_met is True
    assert dev.summary["cases passed"] == {"passRate": 1.0, "cases": 66}
    assert held_out.thresholds == {"cases passed": 0.9} and held_out.thresholds_met is True
    assert held_out.summary["cases passed"]["cases"] == 83
    assert "Finished: dev," in out and "Finished: held_out," in out


def test_a_threshold_of_one_set_is_held_against_that_set_only(catalogue, small_set, tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text(small_set.read_text().replace("name: small", "name: other"))

    with pytest.raises(CommandError) as missed:
        evaluate(
            "--dataset", str(small_set), "--dataset", str(other),
            "--require", "other:Nothing=0.5", "--require", "rounds=0",
        )  # fmt: skip

    assert missed.value.returncode == 1
    assert str(missed.value) == (
        "thresholds missed: small: rounds: no pass/fail result of that name; "
        "other: Nothing: no pass/fail result of that name; "
        "other: rounds: no pass/fail result of that name"
    )
    small = EvaluationRun.objects.get(dataset_name="small")
    assert small.thresholds == {"rounds": 0.0}
    assert EvaluationRun.objects.get(dataset_name="other").thresholds_met is False


def test_two_sets_of_one_name_are_refused(db, small_set):
    with pytest.raises(CommandError) as refused:
        evaluate("--dataset", str(small_set), "--dataset", str(small_set))
    assert refused.value.returncode == 2
    assert "two sets are named 'small'" in str(refused.value)
    assert not EvaluationRun.objects.exists()


def test_an_llm_judge_scores_brief_fit_only_when_asked(catalogue, small_set, fake_providers):
    fake_providers.script(
        turn('{"score": 4, "reason": "Warm, in Thai, names the plan."}'),
        turn("I would rather not say."),
    )
    evaluate("--dataset", str(small_set), "--provider", "demo", "--judge", "openai")

    results = EvaluationResult.objects.order_by("case_name")
    judged = [r.scores.get("brief_fit") or r.scores.get("brief_fit_missing") for r in results]
    assert sorted(str(j["value"]) for j in judged) == ["0.8", "no verdict"]
    assert {j["reason"] for j in judged} == {
        "Warm, in Thai, names the plan.",
        "the answer was not a score: 'I would rather not say.'",
    }
    (first, _) = fake_providers.requests
    assert first["messages"][0]["content"].startswith("You judge radio ads")
    assert "Spotify Premium family plan" in first["messages"][1]["content"]
    assert EvaluationRun.objects.get().summary["brief_fit"] == {"mean": 0.8, "cases": 1}


def test_a_recorded_evaluation_replays_offline_the_same(
    catalogue, small_set, fake_providers, settings, tmp_path
):
    """Recorded against a provider over HTTP (the fake), then replayed with no key at all:
    the same scores, no request made; a recording that runs out fails the case, saying so."""
    music = call("create_music_draft", {"prompt": "warm instrumental bed at 90 bpm, no vocals"})
    upbeat = call("create_music_draft", {"prompt": "upbeat instrumental at 120 bpm, no vocals"})
    fake_providers.script(
        turn(tool_calls=[music]),
        turn("Music v1."),
        turn(tool_calls=[music]),
        turn("Music v1."),
        turn(tool_calls=[upbeat]),
        turn("Music v2, livelier."),
    )
    recording = tmp_path / "recorded.json"
    evaluate("--dataset", str(small_set), "--provider", "openai", "--record", str(recording))
    recorded = EvaluationRun.objects.get()
    assert len(fake_providers.requests) == 6

    settings.ADSTUDIO_PROVIDERS = {
        name: {**entry, "api_key": ""} for name, entry in settings.ADSTUDIO_PROVIDERS.items()
    }
    evaluate("--dataset", str(small_set), "--replay", str(recording))
    replayed = EvaluationRun.objects.exclude(pk=recorded.pk).get()

    def verdicts(run):
        return {
            (r.case_name, name): s["value"]
            for r in run.results.all()
            for name, s in r.scores.items()
            if name != "latency_s"
        }

    assert verdicts(replayed) == verdicts(recorded)
    assert verdicts(replayed)[("th-streaming-family-30-upbeat-music", "RefinementDirection")]
    assert replayed.provider == "replay" and len(fake_providers.requests) == 6
    assert set(Run.objects.values_list("model", flat=True)) == {"fake-openai"}  # as recorded

    data = json.loads(recording.read_text())
    data["sessions"]["th-streaming-family-30-upbeat-music"] = data["sessions"][
        "th-streaming-family-30-upbeat-music"
    ][:2]  # the refinement's answers are gone
    recording.write_text(json.dumps(data))
    evaluate("--dataset", str(small_set), "--replay", str(recording))
    short = EvaluationRun.objects.exclude(pk__in=[recorded.pk, replayed.pk]).get()
    result = short.results.get(case_name="th-streaming-family-30-upbeat-music")
    assert not result.passed
    assert result.scores["RunsSucceeded"]["value"] is False
    failed = Run.objects.filter(status="failed").get()
    assert "the recording has 2 response(s)" in failed.error_message


def test_render_measures_each_ads_speech_in_a_scratch_track(
    catalogue, small_set, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path / "media"
    evaluate("--dataset", str(small_set), "--render")

    for result in EvaluationRun.objects.get().results.all():
        # a case that could not be run has no scores: its error says why
        assert "ScriptFitsSlot" in result.scores, (result.case_name, result.error)
        reason = result.scores["ScriptFitsSlot"]["reason"]
        assert reason.startswith("measured "), reason
        assert Render.objects.filter(ad_id=result.ad_id, status="done").exists()


def test_an_ad_with_nothing_to_hear_fails_its_case_saying_so(make_ad, user):
    from evaluations.runner import CaseFailed, CaseSetup, _measured_speech

    with pytest.raises(CaseFailed, match="the scratch track could not be made: There is"):
        _measured_speech(make_ad(), CaseSetup(owner=user, render=True))
