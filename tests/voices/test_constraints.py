"""The catalogue's invariants live in the database."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from voices.models import Voice

pytestmark = pytest.mark.django_db


def _voice(**overrides) -> Voice:
    fields = {
        "provider": "elevenlabs",
        "provider_voice_id": "v-1",
        "name": "Somchai",
        "language": "th",
        "gender": "male",
    }
    fields.update(overrides)
    return Voice.objects.create(**fields)


def test_provider_voice_id_is_unique_per_provider():
    _voice()
    with (
        pytest.raises(IntegrityError, match="voice_unique_provider_voice_id"),
        transaction.atomic(),
    ):
        _voice(name="Another name")
    _voice(provider="openai")  # same id, other provider: a different voice
    assert Voice.objects.count() == 2


def test_gender_is_checked():
    with pytest.raises(IntegrityError, match="voice_gender_valid"), transaction.atomic():
        _voice(gender="robot")


def test_language_is_required():
    with pytest.raises(IntegrityError, match="voice_language_not_empty"), transaction.atomic():
        _voice(language="")
