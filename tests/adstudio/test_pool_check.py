"""The pool's check of a connection before use: free when the connection is idle and
healthy, a failing round trip when the server has closed it."""

from __future__ import annotations

import psycopg
import pytest

from adstudio.env import pool_check
from tests.support.worker import database_url


class Counting:
    """Counts the round trips the check makes through ``execute``."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.calls = 0
        self.original = conn.execute

        def execute(*args, **kwargs):
            self.calls += 1
            return self.original(*args, **kwargs)

        conn.execute = execute


@pytest.mark.django_db
def test_a_healthy_idle_connection_passes_without_a_round_trip():
    with psycopg.connect(database_url(), autocommit=True) as conn:
        conn.execute("SELECT 1").fetchone()
        counting = Counting(conn)

        pool_check(conn)

        assert counting.calls == 0


@pytest.mark.django_db
def test_a_connection_the_server_closed_fails_the_check():
    with (
        psycopg.connect(database_url(), autocommit=True) as conn,
        psycopg.connect(database_url()) as admin,
    ):
        counting = Counting(conn)
        # With a timeout, it returns once the backend has exited: its goodbye is on the
        # socket by then.
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", [conn.info.backend_pid])
        admin.commit()

        with pytest.raises(psycopg.OperationalError):
            pool_check(conn)
        assert counting.calls == 1
