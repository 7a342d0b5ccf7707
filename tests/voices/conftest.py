"""Fixtures for the voice catalogue tests: a voice factory and catalogue files on disk."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache

from voices.models import Voice


@pytest.fixture(autouse=True)
def _empty_facet_cache():
    """Facets are cached per catalogue version; start every test from nothing."""
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def make_voice() -> Callable[..., Voice]:
    """An approved, active English voice unless told otherwise."""
    numbers = itertools.count(1)

    def make(**overrides: Any) -> Voice:
        number = next(numbers)
        fields: dict[str, Any] = {
            "provider": "test",
            "provider_voice_id": f"v{number}",
            "name": f"Voice {number:03d}",
            "language": "en",
            "gender": "female",
            "approved": True,
            "active": True,
        }
        fields.update(overrides)
        return Voice.objects.create(**fields)

    return make


def voice_row(**overrides: Any) -> dict[str, Any]:
    """One voice in our JSON format."""
    row: dict[str, Any] = {
        "provider": "acme",
        "provider_voice_id": "a1",
        "name": "Somchai",
        "language": "th",
        "gender": "male",
    }
    row.update(overrides)
    return row


@pytest.fixture
def write_json(tmp_path: Path) -> Callable[..., Path]:
    """Write voices as our JSON format, one voice per line (line N+1 holds voice N)."""

    def write(rows: list[Any], name: str = "voices.json") -> Path:
        path = tmp_path / name
        body = ",\n".join(json.dumps(row, ensure_ascii=False) for row in rows)
        path.write_text(f"[\n{body}\n]\n", encoding="utf-8")
        return path

    return write


@pytest.fixture
def write_text(tmp_path: Path) -> Callable[[str, str], Path]:
    def write(text: str, name: str = "voices.csv") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
