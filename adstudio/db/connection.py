"""What a thread does with its database connection: hands it back to the pool before a
long wait, and has a search planned for its own parameters rather than prepared."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection


def release_connection() -> None:
    """Hand this thread's connection back to the pool before a long wait (a model call, a
    long poll), so waiting threads need few connections, not one each. The next query
    takes one again. A no-op without a pool or inside a transaction."""
    if connection.settings_dict.get("OPTIONS", {}).get("pool") and not connection.in_atomic_block:
        connection.close()


@contextmanager
def planned_per_query() -> Iterator[None]:
    """Statements run inside are planned for their own parameters, never prepared.

    Connections prepare a statement they have run five times, and PostgreSQL may then
    use one generic plan for every parameter. That is right for the agent loop's lookups
    by key, and wrong for a search over skewed data: a plan fit for the average accent
    walks a whole language for an accent no voice has."""
    if connection.vendor != "postgresql":
        yield
        return
    connection.ensure_connection()
    driver = connection.connection
    threshold = driver.prepare_threshold
    driver.prepare_threshold = None
    try:
        yield
    finally:
        driver.prepare_threshold = threshold
