"""The render task: thin, the work is ``services.render_make``."""

from __future__ import annotations

from celery import shared_task

from renders.services import RENDER_TASK, render_make


@shared_task(name=RENDER_TASK, ignore_result=True)
def render_scratch_track(render_id: str) -> None:
    render_make(render_id)
