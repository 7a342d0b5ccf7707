"""ASGI entry point: the web processes in production
(``gunicorn adstudio.asgi:application --worker-class uvicorn_worker.UvicornWorker``)."""

import os

from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
django_application = get_asgi_application()

from adstudio.asgi_bodies import BoundedBodies  # noqa: E402  (after settings are loaded)
from adstudio.health import HealthCheckApp  # noqa: E402

application = HealthCheckApp(
    BoundedBodies(
        django_application,
        # The ui-chat transport's (``ChatHistoryParser``): eight times the others'.
        max_bytes=lambda: 8 * settings.ADSTUDIO_MAX_BODY_BYTES,
        timeout=lambda: settings.ADSTUDIO_BODY_READ_TIMEOUT,
    )
)

# As adstudio.wsgi: the provider SDKs now, so that no request waits for them.
from conversations.providers.router import load_adapters  # noqa: E402

load_adapters()
