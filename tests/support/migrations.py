"""Migrating the test database to a past state and back, for tests of data migrations."""

from __future__ import annotations

from django.apps.registry import Apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate_to(targets: list[tuple[str, str]]) -> Apps:
    """Migrate to ``targets`` ((app, migration) pairs); the models as they were there."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def migrate_to_latest() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
