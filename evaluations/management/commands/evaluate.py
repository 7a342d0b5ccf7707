"""Run golden sets through the director and keep the scores (docs/EVALUATIONS.md).

    manage.py evaluate --dataset evals/dev.yaml [--dataset evals/held_out.yaml ...]
        [--provider P] [--model M] [--compare RUN] [--concurrency N] [--max-cost USD]
        [--require [SET:]NAME=RATE ...] [--judge P] [--record FILE | --replay FILE]

Each set is an evaluation run of its own, reported on its own: the dev part, tuned to,
and the held-out part, never tuned to, each with its thresholds ("held_out:cases
passed=0.9"; a threshold without a set's name holds for every set).

Exit status 0 when every threshold is met, 1 when one is missed, 2 when the evaluation
could not start (a bad set, an unknown provider, a cost estimate over --max-cost).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from contextlib import nullcontext
from decimal import Decimal, InvalidOperation
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection

import providers
from conversations.agent.prompts import PROMPT_VERSION
from evaluations.cases import AdOutcome, CaseInput
from evaluations.cost import CostEstimate, estimated_cost
from evaluations.datasets import GoldenSet, InvalidGoldenSet, golden_set, golden_set_hash
from evaluations.judge import BriefFitJudge
from evaluations.models import EvaluationRun, EvaluationStatus
from evaluations.runner import CaseFailed, CaseSetup, run_case
from evaluations.services import ALL, case_deltas, evaluation_run_finish, git_commit, result_record
from providers import replay
from providers.router import rerouted

EVALUATION_USER = "adstudio-evaluations"


def _threshold(text: str) -> tuple[str, str, float]:
    """``[SET:]NAME=RATE`` as (the set's name or "" for every set, NAME, RATE)."""
    name, sep, rate = text.partition("=")
    dataset, colon, name = name.rpartition(":") if ":" in name else ("", "", name)
    try:
        value = float(rate.strip().removesuffix("%")) / (100 if rate.strip().endswith("%") else 1)
    except ValueError:
        value = -1.0
    if not sep or not name.strip() or (colon and not dataset.strip()) or not 0 <= value <= 1:
        raise CommandError(
            f"--require {text!r}: expected [SET:]NAME=RATE with a rate from 0 to 1 (or 0% to "
            f"100%), e.g. ScriptInLanguage=0.9, {ALL}=1 or 'held_out:cases passed=0.9'",
            returncode=2,
        )
    return dataset.strip(), name.strip(), value


def _configured(option: str, provider: str) -> None:
    try:
        providers.route(language="en", requested=provider)
    except providers.ProviderUnavailable as exc:
        raise CommandError(f"{option} {provider}: {exc}", returncode=2) from None


class Command(BaseCommand):
    help = "Run a golden set of briefs through the director, score each ad, keep the run."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dataset",
            action="append",
            required=True,
            help="A golden set, e.g. evals/dev.yaml; repeatable (each is a run of its own)",
        )
        parser.add_argument("--provider", choices=providers.PROVIDER_NAMES, default=None)
        parser.add_argument("--model", default="", help="The provider's model (in-process runs)")
        parser.add_argument("--compare", default="", help="An earlier evaluation run's id")
        parser.add_argument("--concurrency", type=int, default=1)
        parser.add_argument("--max-cost", default="", help="USD: refuse or stop past it")
        parser.add_argument(
            "--require",
            action="append",
            default=[],
            metavar="[SET:]NAME=RATE",
            help=f"A scorer's least pass rate (or {ALL}=RATE for every result), in the set "
            "of that name or in every set; repeatable",
        )
        parser.add_argument("--timeout", type=float, default=600.0, help="Seconds per run")
        parser.add_argument(
            "--judge",
            choices=providers.PROVIDER_NAMES,
            default=None,
            help="Also score brief-fit with an LLM judge on this provider (off by default)",
        )
        parser.add_argument(
            "--render",
            action="store_true",
            help="Render each ad's final versions and score the script's measured length",
        )
        recorded = parser.add_mutually_exclusive_group()
        recorded.add_argument(
            "--record", default="", metavar="FILE", help="Keep every provider response in FILE"
        )
        recorded.add_argument(
            "--replay",
            default="",
            metavar="FILE",
            help="Answer every model call from a recording (no provider is called)",
        )
        parser.add_argument(
            "--owner",
            default=EVALUATION_USER,
            help=f"The user the ads are made as (default {EVALUATION_USER}, made on first use)",
        )

    def handle(self, *args, **options) -> None:
        requirements = [_threshold(t) for t in options["require"]]
        if options["concurrency"] < 1:
            raise CommandError("--concurrency must be at least 1", returncode=2)
        max_cost = self._max_cost(options["max_cost"])
        datasets = self._datasets(options["dataset"], requirements, options["compare"])
        recording, reroute = self._recording(options)
        if options["judge"]:
            _configured("--judge", options["judge"])
            for _path, dataset in datasets:
                dataset.add_evaluator(BriefFitJudge(provider=options["judge"]))
        provider, model = options["provider"], options["model"]
        if model:
            self._use_model(provider, model)
        if provider:
            _configured("--provider", provider)
        baseline = self._baseline(options["compare"])
        owner = self._owner(options["owner"])

        estimates = [
            estimated_cost(dataset, provider=provider, judge=options["judge"])
            for _path, dataset in datasets
        ]
        estimate = CostEstimate(
            turns=sum(e.turns for e in estimates),
            usd=Decimal(0) if options["replay"] else sum((e.usd for e in estimates), Decimal(0)),
            models=("replay",)
            if options["replay"]
            else tuple(dict.fromkeys(m for e in estimates for m in e.models)),
        )
        cases = sum(len(dataset.cases) for _path, dataset in datasets)
        self.stdout.write(
            f"{cases} cases, {estimate.turns} turns on {estimate.describe()}: "
            f"about ${estimate.usd:.4f} estimated"
        )
        if max_cost is not None and estimate.usd > max_cost:
            raise CommandError(
                f"the estimated cost ${estimate.usd:.4f} is over --max-cost ${max_cost}: "
                "nothing was run",
                returncode=2,
            )

        setup = CaseSetup(
            owner=owner,
            provider=provider,
            run_timeout_s=options["timeout"],
            render=options["render"],
        )
        progress = _Progress(self.stdout, total=cases, max_cost=max_cost)
        missed: list[str] = []
        with rerouted(reroute) if reroute else nullcontext():
            for path, dataset in datasets:
                run = EvaluationRun.objects.create(
                    dataset_name=dataset.name or "",
                    dataset_path=path,
                    dataset_hash=golden_set_hash(path),
                    provider=provider or ("replay" if options["replay"] else "routed"),
                    model=model or estimate.model,
                    prompt_version=PROMPT_VERSION,
                    git_commit=git_commit(),
                    compared_with=baseline,
                )
                self.stdout.write(f"Evaluation run {run.pk} ({run.dataset_name})")
                self._evaluate(run, dataset, setup, progress, options["concurrency"])
                thresholds = {
                    name: rate
                    for wanted, name, rate in requirements
                    if wanted in ("", run.dataset_name)
                }
                status = (
                    EvaluationStatus.STOPPED
                    if progress.stopped.is_set()
                    else EvaluationStatus.FINISHED
                )
                run_missed = evaluation_run_finish(run, status=status, thresholds=thresholds)
                self._report(run, baseline, run_missed)
                missed += [f"{run.dataset_name}: {line}" for line in run_missed]
        if options["record"]:
            recording.save(options["record"])
            self.stdout.write(f"Provider responses recorded in {options['record']}")
        if missed:
            raise CommandError("thresholds missed: " + "; ".join(missed), returncode=1)

    def _datasets(
        self, paths: list[str], requirements: list[tuple[str, str, float]], compare: str
    ) -> list[tuple[str, GoldenSet]]:
        """Each set loaded and validated before anything runs; thresholds name sets given."""
        datasets = []
        for path in paths:
            try:
                datasets.append((path, golden_set(path)))
            except InvalidGoldenSet as exc:
                raise CommandError(str(exc), returncode=2) from None
        names = [dataset.name or "" for _path, dataset in datasets]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise CommandError(
                f"--dataset: two sets are named {repeated[0]!r}; each set needs a name of its own",
                returncode=2,
            )
        unknown = sorted({wanted for wanted, _name, _rate in requirements if wanted} - set(names))
        if unknown:
            raise CommandError(
                f"--require {unknown[0]}:...: no set of that name is evaluated "
                f"(the sets: {', '.join(names)})",
                returncode=2,
            )
        if compare and len(datasets) > 1:
            raise CommandError(
                "--compare compares one set's run with an earlier run of it: give one --dataset",
                returncode=2,
            )
        return datasets

    def _evaluate(
        self,
        run: EvaluationRun,
        dataset: GoldenSet,
        setup: CaseSetup,
        progress: _Progress,
        concurrency: int,
    ) -> None:
        """Every case of ``dataset`` run and scored, each result kept on ``run``."""
        names = {id(case.inputs): case.name for case in dataset.cases}

        def run_one(inputs: CaseInput) -> AdOutcome:
            name = names.get(id(inputs), inputs.brief.clientDescription)
            if progress.stopped.is_set():
                raise CaseFailed("not run: the --max-cost guard stopped the evaluation")
            started = time.monotonic()
            try:
                with replay.session(name):
                    outcome = run_case(inputs, setup)
            except Exception as exc:
                progress.ran(name, f"failed: {exc}", Decimal(0))
                raise
            finally:
                connection.close()  # this thread's: the next case may run on another
            cost = Decimal(str(sum(t.cost_usd for t in outcome.turns)))
            statuses = ", ".join(t.status for t in outcome.turns)
            progress.ran(name, f"{statuses} in {time.monotonic() - started:.1f} s", cost)
            return outcome

        async def task(inputs: CaseInput) -> AdOutcome:
            return await asyncio.to_thread(run_one, inputs)

        report = asyncio.run(
            dataset.evaluate(
                task, name=run.dataset_name, max_concurrency=concurrency, progress=False
            )
        )
        for case in report.cases:
            scores = {
                name: {"value": result.value, "reason": result.reason or ""}
                for group in (case.assertions, case.scores, case.labels)
                for name, result in group.items()
            }
            result_record(
                run,
                case_name=case.name,
                inputs=case.inputs.model_dump(mode="json"),
                scores=scores,
                ad_id=case.output.ad_id,
                conversation_id=case.output.conversation_id,
                duration_s=case.task_duration,
            )
        for failure in report.failures:
            result_record(
                run,
                case_name=failure.name,
                inputs=failure.inputs.model_dump(mode="json"),
                scores={},
                error=failure.error_message,
            )

    def _recording(self, options) -> tuple[replay.Recording | None, object]:
        """The recording to keep or replay, and how every route becomes it; both are for
        runs executed in this process, and a replay calls no provider (nor a judge)."""
        path = options["record"] or options["replay"]
        if not path:
            return None, None
        option = "--record" if options["record"] else "--replay"
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            raise CommandError(
                f"{option} needs the runs in this process; with a broker the workers run "
                "them: unset CELERY_BROKER_URL for the evaluation",
                returncode=2,
            )
        if options["replay"] and (options["provider"] or options["model"] or options["judge"]):
            raise CommandError(
                "--replay answers every call from the recording: drop --provider, --model "
                "and --judge",
                returncode=2,
            )
        if options["record"] and options["judge"]:
            raise CommandError("--record keeps the runs' responses: drop --judge", returncode=2)
        if options["record"]:
            folder = Path(path).resolve().parent
            if not folder.is_dir() or not os.access(folder, os.W_OK):
                # Found out now, not after every case has run and been paid for.
                raise CommandError(
                    f"--record {path}: {folder} is not a folder one can write in", returncode=2
                )
            recording = replay.Recording()
            return recording, replay.recorded_route(recording)
        try:
            recording = replay.Recording.load(path)
        except (OSError, ValueError) as exc:
            raise CommandError(f"--replay {path}: {exc}", returncode=2) from None
        return recording, replay.replayed_route(recording)

    def _owner(self, username: str):
        """The user the ads are made as: the evaluations' own (made on first use, never
        able to log in), or a user who exists."""
        users = get_user_model().objects
        if username == EVALUATION_USER:
            return users.get_or_create(username=username, defaults={"is_active": False})[0]
        try:
            return users.get(username=username)
        except users.model.DoesNotExist:
            raise CommandError(f"--owner {username!r}: no such user", returncode=2) from None

    def _max_cost(self, text: str) -> Decimal | None:
        if not text:
            return None
        try:
            value = Decimal(text)
        except InvalidOperation:
            value = Decimal(-1)
        if not value.is_finite() or value < 0:
            raise CommandError(
                f"--max-cost {text!r}: expected an amount in USD such as 2.50", returncode=2
            )
        return value

    def _use_model(self, provider: str | None, model: str) -> None:
        if not provider:
            raise CommandError(
                "--model needs --provider: the model of which provider?", returncode=2
            )
        if not settings.CELERY_TASK_ALWAYS_EAGER:
            raise CommandError(
                "--model sets the model of runs executed in this process; with a broker the "
                "workers run them with their own setting: set it there (docs/providers.md)",
                returncode=2,
            )
        entries = {**settings.ADSTUDIO_PROVIDERS}
        entries[provider] = {**entries.get(provider, {}), "model": model}
        settings.ADSTUDIO_PROVIDERS = entries

    def _baseline(self, run_id: str) -> EvaluationRun | None:
        if not run_id:
            return None
        try:
            return EvaluationRun.objects.get(pk=uuid.UUID(run_id))
        except (ValueError, EvaluationRun.DoesNotExist):
            raise CommandError(
                f"--compare {run_id!r}: no such evaluation run", returncode=2
            ) from None

    def _report(
        self, run: EvaluationRun, baseline: EvaluationRun | None, missed: list[str]
    ) -> None:
        self.stdout.write(
            f"\n{run.get_status_display()}: {run.dataset_name}, {run.provider}/{run.model}"
        )
        for name, figures in run.summary.items():
            if "passRate" in figures:
                value = f"{figures['passRate']:.0%} passed"
            else:
                value = f"mean {figures['mean']:g}"
            self.stdout.write(f"  {name:<22} {value:>14}  ({figures['cases']} cases)")
        if baseline is not None:
            deltas = case_deltas(run, baseline)
            self.stdout.write(f"\nAgainst {baseline.pk}: {len(deltas)} cases changed")
            for row in deltas:
                mark = "REGRESSED " if row["regressions"] else ""
                changed = ", ".join(
                    f"{name} {change['before']} -> {change['after']}"
                    for name, change in row["changes"].items()
                )
                self.stdout.write(f"  {mark}{row['case']}: {changed}")
        for line in missed:
            self.stdout.write(self.style.ERROR(f"  missed: {line}"))


class _Progress:
    """A line per finished case, and the cost guard's account."""

    def __init__(self, out, *, total: int, max_cost: Decimal | None) -> None:
        self.out, self.total, self.max_cost = out, total, max_cost
        self.done, self.spent = 0, Decimal(0)
        self.stopped = threading.Event()
        self._lock = threading.Lock()

    def ran(self, name: str, how: str, cost: Decimal) -> None:
        with self._lock:
            self.done += 1
            self.spent += cost
            self.out.write(f"[{self.done}/{self.total}] {name}: {how} (${self.spent:.4f} so far)")
            if self.max_cost is not None and self.spent >= self.max_cost:
                if not self.stopped.is_set():
                    self.out.write(f"--max-cost ${self.max_cost} reached: no further case starts")
                self.stopped.set()
