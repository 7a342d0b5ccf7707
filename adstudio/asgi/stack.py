"""The ASGI application, served as ``adstudio.asgi:application`` (the package hands it
out when asked).

In front, answered in the event loop: the probes (``adstudio.asgi.health``) and the
request body, read whole and bounded (``adstudio.asgi.bodies``). Then requests that follow
a run go to Django's ASGI handler and wait without a thread; the others to its WSGI
handler, in a pool of ``ADSTUDIO_WEB_THREADS`` threads (``adstudio.asgi.routing``).
"""

import os

from a2wsgi import WSGIMiddleware
from django.conf import settings
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
django_asgi = get_asgi_application()

# After settings are loaded; adstudio.wsgi also loads the provider SDKs, so that no
# request waits for them.
from adstudio.asgi.bodies import BoundedBodies  # noqa: E402
from adstudio.asgi.health import HealthCheckApp  # noqa: E402
from adstudio.asgi.routing import ByView  # noqa: E402
from adstudio.wsgi import application as django_wsgi  # noqa: E402

application = HealthCheckApp(
    BoundedBodies(
        ByView(
            waiting=django_asgi,
            computing=WSGIMiddleware(django_wsgi, workers=settings.ADSTUDIO_WEB_THREADS),
            openings=settings.ADSTUDIO_WEB_STREAM_OPENINGS,
        ),
        # The ui-chat transport's (``ChatHistoryParser``): eight times the others'.
        max_bytes=lambda: 8 * settings.ADSTUDIO_MAX_BODY_BYTES,
        timeout=lambda: settings.ADSTUDIO_BODY_READ_TIMEOUT,
    )
)
