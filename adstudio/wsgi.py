"""WSGI entry point (gunicorn adstudio.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
application = get_wsgi_application()

# The provider SDKs are imported when a provider is first built (conversations.providers
# .router); a web process imports them now, so that no request waits for them.
from conversations.providers.router import load_adapters  # noqa: E402

load_adapters()
