"""The embedded default (no environment: SQLite, tasks in-process, the demo director) makes
a whole ad, as a newcomer's first `make run` does."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the product in processes of its own

ROOT = Path(__file__).resolve().parents[2]
_SERVICE_VARS = {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL"}


def manage(*args: str, database: Path, stdin: str = "") -> subprocess.CompletedProcess:
    env = {
        k: v for k, v in os.environ.items() if k not in _SERVICE_VARS and not k.endswith("_API_KEY")
    }
    env["DATABASE_URL"] = f"sqlite:///{database}"
    env["DEBUG"] = "1"  # as `make run` sets it: setup_demo then creates the admin user
    env["MEDIA_ROOT"] = str(database.parent / "media")  # scratch tracks: the test's own
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_demo_director_drafts_every_panel_on_sqlite(tmp_path):
    database = tmp_path / "db.sqlite3"
    for step in (("migrate", "--noinput"), ("setup_demo",)):
        result = manage(*step, database=database)
        assert result.returncode == 0, result.stdout + result.stderr

    chat = manage(
        "chat",
        "--brief",
        "Spotify Premium family plan",
        "--language",
        "th",
        database=database,
        stdin=f"make the music more upbeat\n/render {tmp_path / 'ad.ogg'}\n",
    )
    assert chat.returncode == 0, chat.stdout + chat.stderr
    # a scratch track with nothing but the pip install: eSpeak NG, numpy, libsndfile
    assert f"Written to {tmp_path / 'ad.ogg'}." in chat.stdout, chat.stdout
    assert "Scratch track of voices v1, music v2, sfx v1" in chat.stdout
    assert (tmp_path / "ad.ogg").stat().st_size > 10_000

    # the rows as stored, read by SQLite itself (a Django process more would cost seconds)
    with closing(sqlite3.connect(database)) as stored:
        drafts = sorted(stored.execute("SELECT kind, version FROM drafts_draft").fetchall())
        runs = stored.execute(
            "SELECT status, error_code FROM conversations_run ORDER BY created_at"
        ).fetchall()
    # generation: v1 of each panel; the follow-up: music v2 only
    assert drafts == [("music", 1), ("music", 2), ("sfx", 1), ("voices", 1)]
    # each over a history SQLite holds whole (the finish checks it there too)
    assert runs == [("succeeded", ""), ("succeeded", "")]
    assert "internal error" not in chat.stdout
