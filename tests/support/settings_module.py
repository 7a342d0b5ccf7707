"""The settings module read from an environment of the test's choosing, in this process:
what a new process would make of that environment, without starting one."""

from __future__ import annotations

import os
import runpy
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

SETTINGS = Path(__file__).resolve().parents[2] / "adstudio" / "settings.py"


@contextmanager
def environment(env: dict[str, str]) -> Iterator[None]:
    """This environment without its DATABASE_URL and CELERY_BROKER_URL, ``env`` on top,
    within the block."""
    saved = dict(os.environ)
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("CELERY_BROKER_URL", None)
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def settings_with(env: dict[str, str] | None = None) -> dict[str, Any]:
    """The settings module's values, read from this environment as a new process would:
    ``env`` on top of this one's, without its DATABASE_URL and CELERY_BROKER_URL."""
    with environment(env or {}):
        return runpy.run_path(str(SETTINGS))


def start_up_error(env: dict[str, str]) -> str:
    """What start-up says of ``env``: the ``ImproperlyConfigured`` the settings raise."""
    with pytest.raises(ImproperlyConfigured) as caught:
        settings_with(env)
    return str(caught.value)
