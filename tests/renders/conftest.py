from __future__ import annotations

import pytest
from celery.signals import task_prerun

from drafts.services import draft_create
from providers.demo_lines import LINES
from tests.support.versions import music, sfx, voices


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    """Each test's own media folder: the files its renders store."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def ad(make_ad):
    """A 5 s Thai ad (the shortest there is: a scratch track costs its length to make) with
    two voices versions, music and an effect."""
    ad = make_ad(language="th", duration_s=5)
    thai = LINES["th"].calm
    draft_create(ad=ad, version=voices(thai[0], thai[1]))
    draft_create(ad=ad, version=voices(thai[2], thai[3], thai[4]))
    draft_create(ad=ad, version=music("warm pad at 90 bpm", duration=5))
    draft_create(ad=ad, version=sfx("chime"))
    return ad


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
