"""Login lockouts against the production server: wrong admin passwords from several
client addresses, and whether any got through after its lockout.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/adstudio \\
        .venv/bin/python -m benchmarks.login_lockout [--addresses 10] [--attempts 100]
        [--limit 5] [--web-workers 2] [--database NAME]

Starts gunicorn as README deploys it (uvicorn's workers, ``--web-workers`` processes,
DEBUG off, static files collected) on the benchmark database, with
``ADSTUDIO_LOGIN_FAILURE_LIMIT=--limit`` and the other lockout settings at their
defaults. Each of ``--addresses`` clients connects from an address of its own on loopback
(127.0.0.11, .12, ...): the deployment counts the address the web server gives a request,
which is the peer's own unless the peer is a proxy in ``FORWARDED_ALLOW_IPS``, so no
``X-Forwarded-For`` is sent (none would be believed from these addresses). The clients
run at once; each opens the login page once (its CSRF cookie and token) and posts
``--attempts`` wrong passwords, one after the other, for a staff user of its own. Then,
from each address, the right password for that user and for another user (the address is
locked), and from a fresh address the right password for each user (the user is locked).

Reported: the attempt at which each address was first refused (429; it must be the
limit-th), the 200s after it (must be 0), the logins that ended with a session (must be
0), and the time per answer before and after the lockout (a refused login checks no
password). Results also go to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from benchmarks._bench_db import (
    DEFAULT_DATABASE,
    bench_database_url,
    create_database,
    free_port,
    machine,
    percentile,
    setup_django,
    start,
    wait_http,
    web_command,
    write_results,
)

PASSWORD = "bench-right-password-31"
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def client(address: str) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(local_address=address), timeout=60)


class Browser:
    """One client address's browser: the login page once, then its form posted."""

    def __init__(self, base: str, address: str) -> None:
        self.base = base
        self.address = address
        self.http = client(address)
        page = self.http.get(f"{base}/admin/login/")
        page.raise_for_status()
        self.token = _CSRF.search(page.text).group(1)

    def post(self, username: str, password: str) -> tuple[int, float, bool]:
        """The status, seconds taken, and whether a session was made."""
        self.http.cookies.delete("sessionid")
        started = time.perf_counter()
        response = self.http.post(
            f"{self.base}/admin/login/?next=/admin/",
            data={"csrfmiddlewaretoken": self.token, "username": username, "password": password},
            headers={"Referer": f"{self.base}/admin/login/"},
        )
        took = time.perf_counter() - started
        return response.status_code, took, "sessionid" in response.cookies


def guesses(base: str, address: str, username: str, attempts: int) -> dict:
    browser = Browser(base, address)
    answers = [browser.post(username, f"wrong-{n}") for n in range(attempts)]
    statuses = [status for status, _, _ in answers]
    first_refused = statuses.index(429) + 1 if 429 in statuses else None
    after = statuses[first_refused:] if first_refused else []
    return {
        "address": address,
        "username": username,
        "statuses": dict(Counter(statuses)),
        "first_refused": first_refused,
        "ok_after_lockout": sum(1 for status in after if status == 200),
        "sessions": sum(1 for _, _, session in answers if session),
        "seconds_checked": [took for status, took, _ in answers if status == 200],
        "seconds_refused": [took for status, took, _ in answers if status == 429],
        "browser": browser,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addresses", type=int, default=10)
    parser.add_argument("--attempts", type=int, default=100)
    parser.add_argument("--limit", type=int, default=5)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--database", default=DEFAULT_DATABASE)
    args = parser.parse_args()
    if not 1 <= args.addresses <= 200:
        parser.error("--addresses: 1 to 200 (127.0.0.11 onwards)")
    url = bench_database_url(args.database)
    create_database(url)
    setup_django(url)
    logging.getLogger("httpx").setLevel(logging.WARNING)

    from axes.models import AccessAttempt
    from django.contrib.auth.models import User

    AccessAttempt.objects.all().delete()  # a previous invocation's lockouts
    addresses = [f"127.0.0.{11 + n}" for n in range(args.addresses)]
    usernames = [f"lockout-staff-{n}" for n in range(args.addresses)]
    User.objects.filter(username__in=usernames).delete()
    for name in usernames:
        User.objects.create_user(name, password=PASSWORD, is_staff=True)

    port = free_port()
    with tempfile.TemporaryDirectory() as work:
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1",
            "STATIC_ROOT": str(Path(work) / "static"),
            "ADSTUDIO_LOGIN_FAILURE_LIMIT": str(args.limit),
            "LOG_LEVEL": "WARNING",
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
            env=env,
            check=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        web = start(
            web_command(port, workers=args.web_workers, threads=8), env, Path(work) / "web.log"
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_http(f"{base}/healthz")
            started = time.monotonic()
            with ThreadPoolExecutor(args.addresses) as pool:
                per_address = list(
                    pool.map(
                        lambda pair: guesses(base, *pair, args.attempts),
                        zip(addresses, usernames, strict=True),
                    )
                )
            seconds = time.monotonic() - started
            # The right passwords now: the address's own user, another user from the same
            # address, and each user from an address that never failed.
            right = []
            for n, result in enumerate(per_address):
                other = usernames[(n + 1) % len(usernames)]
                for username in (result["username"], other):
                    status, _, session = result["browser"].post(username, PASSWORD)
                    right.append({"from": result["address"], "username": username,
                                  "status": status, "session": session})  # fmt: skip
            fresh = Browser(base, "127.0.0.250")
            for username in usernames:
                status, _, session = fresh.post(username, PASSWORD)
                right.append({"from": fresh.address, "username": username,
                              "status": status, "session": session})  # fmt: skip
        finally:
            os.killpg(web.pid, 15)
            web.wait(timeout=30)
        errors = [
            line
            for line in (Path(work) / "web.log").read_text().splitlines()
            if " ERROR " in line or "Traceback" in line
        ]

    checked = [s for r in per_address for s in r["seconds_checked"]]
    refused = [s for r in per_address for s in r["seconds_refused"]]
    summary = {
        "addresses": args.addresses,
        "attempts_per_address": args.attempts,
        "limit": args.limit,
        "web_workers": args.web_workers,
        "seconds": round(seconds, 2),
        "wrong_passwords_sent": sum(sum(r["statuses"].values()) for r in per_address),
        "first_refused": sorted({r["first_refused"] for r in per_address}, key=str),
        "ok_after_lockout": sum(r["ok_after_lockout"] for r in per_address),
        "sessions_from_wrong_passwords": sum(r["sessions"] for r in per_address),
        "statuses": dict(sum((Counter(r["statuses"]) for r in per_address), Counter())),
        "right_passwords_after_lockout": dict(Counter(r["status"] for r in right)),
        "sessions_after_lockout": sum(1 for r in right if r["session"]),
        "ms_checked_p50_p95": [round(1000 * percentile(checked, q), 1) for q in (0.5, 0.95)],
        "ms_refused_p50_p95": [round(1000 * percentile(refused, q), 1) for q in (0.5, 0.95)],
        "server_errors": errors[:5],
        "machine": machine(),
    }
    for result in per_address:
        print(
            f"{result['address']} {result['username']}: {result['statuses']}, first 429 at "
            f"attempt {result['first_refused']}, 200s after it {result['ok_after_lockout']}"
        )
    for key, value in summary.items():
        if key != "machine":
            print(f"{key}: {value}")
    print(f"results: {write_results('login_lockout', summary)}")
    ok = (
        summary["first_refused"] == [args.limit]
        and summary["ok_after_lockout"] == 0
        and summary["sessions_from_wrong_passwords"] == 0
        and summary["sessions_after_lockout"] == 0
        and set(summary["right_passwords_after_lockout"]) == {429}
    )
    print(
        "bar (first 429 at the limit, no 200 and no session after it):", "met" if ok else "NOT met"
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
