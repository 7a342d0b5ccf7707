"""Database connection helpers shared by the apps."""

from __future__ import annotations

from django.db import connection


def release_connection() -> None:
    """Hand this thread's connection back to the pool before a long wait (a model call, a
    long poll), so waiting threads need few connections, not one each. The next query
    takes one again. A no-op without a pool or inside a transaction."""
    if connection.settings_dict.get("OPTIONS", {}).get("pool") and not connection.in_atomic_block:
        connection.close()
