"""WSGI entry point (gunicorn adstudio.wsgi)."""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

from adstudio.chunked import ChunkedBodies

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
django_application = get_wsgi_application()


def _largest_body() -> int:
    """The ui-chat transport's (``ChatHistoryParser``): eight times the others'."""
    return 8 * settings.ADSTUDIO_MAX_BODY_BYTES


application = ChunkedBodies(django_application, max_bytes=_largest_body)

# The provider SDKs are imported when a provider is first built (conversations.providers
# .router); a web process imports them now, so that no request waits for them.
from conversations.providers.router import load_adapters  # noqa: E402

load_adapters()
