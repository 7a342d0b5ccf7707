"""The database keeps one render per combination of versions, a missing kind included
(a plain unique constraint over nullable columns would let NULLs repeat)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from drafts.services import draft_create
from renders.models import Render
from tests.support.versions import music, voices

pytestmark = pytest.mark.django_db


def test_a_combination_is_rendered_once_even_without_a_kind(ad):
    music_v1, _ = draft_create(ad=ad, version=music())
    voices_v1, _ = draft_create(ad=ad, version=voices())
    Render.objects.create(ad=ad, music=music_v1)  # no voices, no sfx

    with pytest.raises(IntegrityError, match="render_once_per_versions"), transaction.atomic():
        Render.objects.create(ad=ad, music=music_v1)
    Render.objects.create(ad=ad, music=music_v1, voices=voices_v1)  # another combination
    assert (
        Render.objects.get(voices=voices_v1).combination
        == f"{voices_v1.pk.hex}:{music_v1.pk.hex}:-"
    )


def test_a_combination_that_is_not_its_versions_is_refused(ad):
    music_v1, _ = draft_create(ad=ad, version=music())
    render = Render.objects.create(ad=ad, music=music_v1)

    refused = pytest.raises(IntegrityError, match="render_combination_is_its_versions")
    with refused, transaction.atomic():
        Render.objects.filter(pk=render.pk).update(combination="-:-:-")
