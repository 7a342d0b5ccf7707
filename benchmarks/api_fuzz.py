"""Property-based requests against every operation of the API's OpenAPI schema, with far
more examples than the suite's run: no input makes the API answer 5xx or contradict its
own schema.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.api_fuzz [--max-examples 200] [--seed N] [--operation TEXT]

The same generation as tests/test_api_schema.py (schemathesis: the schema's examples,
coverage cases, then ``--max-examples`` generated cases per operation, valid and invalid),
sent in-process to the WSGI app on a database of its own (``adstudio_bench_fuzz``),
authenticated as a staff user; runs execute in-process with the offline demo director.
Every other case is pointed at existing objects (an ad with its conversation, runs and
drafts; a voice) and, where it names a language, at one the catalogue has, so it gets
past the 404 and the language check.

Checks: no 5xx, the response matches the documented schema and content type, and nothing
is logged as an error while a request is served. Prints the requests sent per operation
(by status class) and in total, and each distinct failure once with a curl command, the
response and the server's traceback. Exits 1 on any failure. Results go to
benchmarks/results/.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from benchmarks._bench_db import (
    ROOT,
    bench_database_url,
    create_database,
    machine,
    setup_django,
    write_results,
)

DATABASE = "adstudio_bench_fuzz"
SAMPLE_CATALOGUE = ROOT / "voices" / "fixtures" / "sample_catalogue.json"
LANGUAGES = ["th", "en", "Spanish", "pt-BR", "vi", "mandarin"]  # all in the sample catalogue


class ErrorLog(logging.Handler):
    """Keeps what the app logs at ERROR (a 500's traceback, a run's internal error)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[str]:
        formatter = logging.Formatter("%(name)s: %(message)s")
        texts = []
        for record in self.records:
            text = formatter.format(record)  # appends the traceback when there is one
            texts.append(text)
        self.records.clear()
        return texts


@dataclass
class Finding:
    operation: str
    kind: str
    curl: str
    status: int | None
    response: str
    message: str
    traceback: list[str] = field(default_factory=list)
    count: int = 1


class Objects:
    """Existing objects of the fuzzing user, for path parameters that should resolve."""

    def __init__(self, user) -> None:
        from conversations.run_request import RunRequest
        from conversations.services import brief_send, send_message
        from drafts.models import Draft
        from drafts.services import ad_create
        from voices.models import Voice

        self.user = user
        self.ad = ad_create(
            owner=user, client="Spotify Premium family plan", language="th", duration_s=30
        )
        run = brief_send(request=RunRequest(ad=self.ad))  # runs in-process: no broker
        self.conversation = run.conversation
        follow_up = send_message(
            request=RunRequest(conversation=self.conversation, text="Make it more upbeat.")
        )
        self.runs = [str(run.pk), str(follow_up.pk)]
        self.drafts = [
            str(pk) for pk in Draft.objects.filter(ad=self.ad).values_list("pk", flat=True)
        ]
        self.voice = str(Voice.objects.filter(approved=True, language="th").first().pk)
        if not self.drafts:
            sys.exit("The demo director wrote no draft: is the sample voice catalogue loaded?")

    def path_parameters(self, operation, rng: random.Random) -> dict[str, str]:
        from drafts.services import ad_create

        path, method = operation.path, operation.method.upper()
        if path.startswith("/api/ads/{ad_id}"):
            return {"ad_id": str(self.ad.pk)}
        if path == "/api/ads/{id}/" and method == "DELETE":  # each deletion gets its own ad
            fresh = ad_create(owner=self.user, client="Deletable", language="en", duration_s=15)
            return {"id": str(fresh.pk)}
        if path.startswith("/api/ads/{id}"):
            return {"id": str(self.ad.pk)}
        if path.startswith("/api/conversations/{id}"):
            return {"id": str(self.conversation.pk)}
        if path.startswith("/api/drafts/{id}"):
            return {"id": rng.choice(self.drafts)}
        if path.startswith("/api/runs/{id}"):
            return {"id": rng.choice(self.runs)}
        if path.startswith("/api/voices/{id}"):
            return {"id": self.voice}
        return {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=200, help="generated per operation")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--operation",
        action="append",
        default=[],
        help='only operations whose label contains this text, e.g. "POST /api/ads/"',
    )
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1_000_000)

    # The app as the embedded default runs it: tasks in-process, the offline demo director.
    for name in (
        "CELERY_BROKER_URL",
        "CACHE_URL",
        "OPENAI_API_KEY",
        "DASHSCOPE_API_KEY",
        "MOONSHOT_API_KEY",
        "ANTHROPIC_API_KEY",
    ):
        os.environ.pop(name, None)
    os.environ["ADSTUDIO_RUN_RATE"] = "1000000/minute"
    os.environ["LOG_LEVEL"] = "ERROR"
    url = bench_database_url(DATABASE)
    create_database(url)
    setup_django(url)

    import hypothesis
    import schemathesis
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from hypothesis import HealthCheck
    from schemathesis.checks import (
        content_type_conformance,
        not_a_server_error,
        response_schema_conformance,
    )
    from schemathesis.core.failures import FailureGroup
    from schemathesis.core.result import Ok

    # What schema.parametrize() builds for each operation (examples, coverage, fuzzing).
    from schemathesis.pytest.lazy import get_all_tests

    from accounts.services import token_create
    from adstudio.wsgi import application
    from voices.models import Voice

    settings.ADSTUDIO_MAX_WAIT_SECONDS = 0.2  # ?wait= never holds a case up
    errors = ErrorLog()
    root = logging.getLogger()
    for handler in root.handlers:
        handler.setLevel(logging.CRITICAL + 1)  # kept in the findings instead
    root.addHandler(errors)

    if not Voice.objects.filter(approved=True, active=True).exists():
        call_command(
            "import_voices", str(SAMPLE_CATALOGUE), "--provider", "sample", "--approve", verbosity=0
        )
    user, _ = User.objects.get_or_create(
        username="fuzz", defaults={"is_staff": True, "is_superuser": True}
    )
    auth = {"Authorization": f"Token {token_create(user=user)[1]}"}
    objects = Objects(user)
    setup_errors = errors.take()
    if setup_errors:
        sys.exit("Setting up the objects logged errors:\n" + "\n".join(setup_errors))

    schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
    schema.config.seed = seed
    checks = [not_a_server_error, response_schema_conformance, content_type_conformance]
    rng = random.Random(seed)
    tried: Counter[str] = Counter()
    statuses: dict[str, Counter[str]] = defaultdict(Counter)
    findings: dict[tuple, Finding] = {}

    def record(operation: str, kind: str, case, response, message: str, logged: list[str]):
        key = (operation, kind, getattr(response, "status_code", None))
        if key in findings:
            findings[key].count += 1
            return
        findings[key] = Finding(
            operation=operation,
            kind=kind,
            curl=case.as_curl_command(headers=auth),
            status=getattr(response, "status_code", None),
            response=(getattr(response, "text", "") or "")[:800],
            message=message.strip()[:1500],
            traceback=logged,
        )

    def known(case) -> None:
        """Point the case at existing objects (in its path and body) and a language the
        catalogue has, so it gets past the 404 and the language check."""
        if case.path_parameters:
            case.path_parameters = objects.path_parameters(case.operation, rng)
        if isinstance(case.body, dict):
            if "adId" in case.body:
                case.body["adId"] = str(objects.ad.pk)
            if "conversationId" in case.body:
                case.body["conversationId"] = str(objects.conversation.pk)
        briefs = [case.body, case.body.get("brief")] if isinstance(case.body, dict) else []
        for brief in briefs:
            if isinstance(brief, dict) and "language" in brief:
                brief["language"] = rng.choice(LANGUAGES)
        if case.query and "language" in case.query:
            case.query["language"] = rng.choice(LANGUAGES)

    def exercise(case) -> None:
        operation = case.operation.label
        tried[operation] += 1
        if tried[operation] % 2 == 0:
            known(case)
        errors.take()
        try:
            response = case.call(headers=auth)
        except Exception as exc:  # the app raised through the WSGI handler
            record(operation, f"raised {type(exc).__name__}", case, None, str(exc), errors.take())
            return
        statuses[operation][f"{response.status_code // 100}xx"] += 1
        try:
            case.validate_response(response, checks=checks, headers=auth)
        except FailureGroup as group:
            logged = errors.take()
            for failure in group.exceptions:
                record(operation, failure.title, case, response, failure.message, logged)
        logged = errors.take()
        if logged:
            first = logged[0].splitlines()[0]
            record(operation, f"logged an error: {first[:120]}", case, response, "", logged)

    options = hypothesis.settings(
        max_examples=args.max_examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=False,
    )
    crashed: dict[str, str] = {}
    started = time.monotonic()
    print(f"api_fuzz: {args.max_examples} generated cases per operation, seed {seed}")
    for result in get_all_tests(
        schema=schema, test_func=exercise, settings=options, given_kwargs=None
    ):
        if not isinstance(result, Ok):
            crashed[str(result.err())] = "the schema could not be read"
            continue
        operation, test = result.ok()
        if args.operation and not any(text in operation.label for text in args.operation):
            continue
        began = time.monotonic()
        try:
            test()
        except Exception as exc:  # hypothesis itself gave up (e.g. unsatisfiable)
            crashed[operation.label] = f"{type(exc).__name__}: {exc}"[:500]
        by_class = ", ".join(f"{k} {v}" for k, v in sorted(statuses[operation.label].items()))
        print(
            f"  {operation.label:<38} {tried[operation.label]:>6} requests "
            f"{time.monotonic() - began:6.1f} s   ({by_class})"
        )
    elapsed = time.monotonic() - started
    total = sum(tried.values())
    print(f"  {'total':<38} {total:>6} requests {elapsed:6.1f} s")

    if findings or crashed:
        print(
            f"FAILURES: {len(findings)} distinct, {sum(f.count for f in findings.values())} cases"
        )
    for finding in findings.values():
        print(f"\n--- {finding.operation}: {finding.kind} ({finding.count} cases)")
        print(f"  status {finding.status}; reproduce with:\n    {finding.curl}")
        if finding.message:
            print("  " + finding.message.replace("\n", "\n  "))
        if finding.response:
            print(f"  response: {finding.response[:400]}")
        for text in finding.traceback[:2]:
            print("  server log:\n    " + text.replace("\n", "\n    "))
    for label, reason in crashed.items():
        print(f"\n--- {label}: the generator stopped: {reason}")
    if not findings and not crashed:
        print("no failures")
    path = write_results(
        "api_fuzz",
        {
            "max_examples": args.max_examples,
            "seed": seed,
            "requests": dict(tried),
            "statuses": {label: dict(counts) for label, counts in statuses.items()},
            "total_requests": total,
            "elapsed_s": round(elapsed, 1),
            "findings": [vars(f) for f in findings.values()],
            "generator_errors": crashed,
            "machine": machine(),
        },
    )
    print(f"results: {path}")
    if findings or crashed:
        sys.exit(1)


if __name__ == "__main__":
    main()
