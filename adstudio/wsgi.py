"""WSGI entry point (gunicorn adstudio.wsgi)."""

import os
import threading

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from adstudio.chunked import ChunkedBodies

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
django_application = get_wsgi_application()


def _largest_body() -> int:
    """The ui-chat transport's (``ChatHistoryParser``): eight times the others'."""
    return 8 * settings.ADSTUDIO_MAX_BODY_BYTES


application = ChunkedBodies(django_application, max_bytes=_largest_body)


def _load_what_first_requests_would() -> None:
    """Load what a web process's first requests would load, so that few wait for it (a
    process's first chat message took 200-400 ms more than the next): the provider SDKs
    (imported when a provider is first built), the run task and the loop it imports,
    Celery's task registry, and the URL resolver's map for ``reverse``. In a thread of its
    own, once the process serves: a process started by a reload takes its share of the
    requests a second and a half sooner (the SDKs are most of its start), and a request
    that needs an SDK before it is loaded waits for that import, as it would have."""
    from django.apps import apps
    from django.urls import get_resolver

    from adstudio.celery import app as celery_app

    for config in apps.get_app_configs():  # each app's own (ProvidersConfig.warm_up)
        warm_up = getattr(config, "warm_up", None)
        if warm_up is not None:
            warm_up()
    celery_app.finalize()
    get_resolver().reverse_dict  # noqa: B018  (built on first use)


threading.Thread(target=_load_what_first_requests_would, name="warm-up", daemon=True).start()
