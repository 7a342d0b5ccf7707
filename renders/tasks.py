"""The render task: thin, the work is ``services.render_make``."""

from __future__ import annotations

import logging
import time

from celery import shared_task
from celery.signals import worker_init

from renders.services import RENDER_TASK, render_make

logger = logging.getLogger(__name__)


@shared_task(name=RENDER_TASK, ignore_result=True)
def render_scratch_track(render_id: str) -> None:
    render_make(render_id)


@worker_init.connect
def _load_audio_at_worker_start(sender=None, **kwargs) -> None:
    """The mix's libraries and eSpeak NG, before the worker takes its first render."""
    started = time.perf_counter()
    from audio import mix, speech  # noqa: F401

    speech.sample_rate()
    logger.info("scratch-track audio loaded in %.2f s", time.perf_counter() - started)
