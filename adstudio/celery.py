"""The Celery application; configuration comes from the ``CELERY_*`` Django settings."""

from __future__ import annotations

import logging.config
import os

from celery import Celery
from celery.signals import setup_logging, worker_ready
from kombu.transport import TRANSPORT_ALIASES

# redis:// and rediss:// brokers go through our subclass of kombu's Redis transport
# (adstudio/broker.py says why); the scheme still decides the rest, TLS included.
TRANSPORT_ALIASES["redis"] = TRANSPORT_ALIASES["rediss"] = "adstudio.broker:Transport"

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")

app = Celery("adstudio")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def _log_as_the_web_does(**kwargs) -> None:
    """The worker logs through Django's ``LOGGING`` (``LOG_FORMAT``, ``LOG_LEVEL``, the ids
    of each run on its lines) instead of replacing the root logger's handlers with
    Celery's own format."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)


@worker_ready.connect
def _sweep_in_every_worker(**kwargs) -> None:
    """Every worker process runs the periodic sweeps, one process at a time across the
    hosts (``adstudio.sweeps``): the first at once, to take up what a dead one left; none
    where ``ADSTUDIO_SWEEPS`` is off."""
    from django.conf import settings

    from adstudio import sweeps

    if settings.ADSTUDIO_SWEEPS:
        sweeps.start()
