"""The database's time, read (``database_now``) or written into plain SQL (``now_sql``)."""

from __future__ import annotations

from datetime import datetime

from django.db import connection
from django.utils import timezone


def database_now() -> datetime:
    """The database's time now: what leases, heartbeats and a run's times are judged by,
    whichever host asks, so hosts whose clocks disagree still agree on them. (SQLite, the
    embedded default, is one host: its clock is the only one.)"""
    if connection.vendor != "postgresql":
        return timezone.now()
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement_timestamp()")
        return cursor.fetchone()[0]


def now_sql() -> str:
    """The database's time now, in plain SQL that takes parameters (as Django's ``Now``)."""
    if connection.vendor == "postgresql":
        return "statement_timestamp()"
    return "STRFTIME('%%Y-%%m-%%d %%H:%%M:%%f', 'NOW')"
