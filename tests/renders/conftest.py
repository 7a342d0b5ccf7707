from __future__ import annotations

import pytest
from celery.signals import task_prerun


@pytest.fixture
def tasks_executed():
    """The names of the Celery tasks run during the test (in-process: no broker)."""
    names: list[str] = []

    def record(sender=None, **_):
        names.append(sender.name)

    task_prerun.connect(record, weak=False)
    try:
        yield names
    finally:
        task_prerun.disconnect(record)
