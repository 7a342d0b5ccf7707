"""The render tasks: thin, the work is in ``making`` and ``recover``. Each takes ids only
and is safe to run twice."""

from __future__ import annotations

import logging
import time

from celery import shared_task
from celery.signals import worker_init
from django.conf import settings

from renders.making import render_make
from renders.recover import render_files_prune, renders_recover
from renders.services import RENDER_TASK

logger = logging.getLogger(__name__)


@shared_task(name=RENDER_TASK, ignore_result=True)
def render_scratch_track(render_id: str) -> None:
    render_make(render_id)


@shared_task(name="renders.tasks.recover_renders", ignore_result=True)
def recover_renders() -> int:
    """The sweeps, by hand (``celery call``): the workers run them on their own."""
    return len(renders_recover())


@shared_task(name="renders.tasks.prune_render_files", ignore_result=True)
def prune_render_files() -> int:
    return render_files_prune()


@worker_init.connect
def _load_audio_at_worker_start(sender=None, **kwargs) -> None:
    """The mix's libraries and eSpeak NG, before the worker takes its first render; unless
    ``ADSTUDIO_WORKER_LOADS_AUDIO`` is off (``renders.making`` loads them when needed)."""
    if not settings.ADSTUDIO_WORKER_LOADS_AUDIO:
        logger.info("scratch-track audio left for the first render (ADSTUDIO_WORKER_LOADS_AUDIO)")
        return
    started = time.perf_counter()
    from audio import guide_voice, mix  # noqa: F401

    guide_voice.sample_rate()
    logger.info("scratch-track audio loaded in %.2f s", time.perf_counter() - started)
