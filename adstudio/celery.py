"""The Celery application; configuration comes from the ``CELERY_*`` Django settings."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")

app = Celery("adstudio")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
