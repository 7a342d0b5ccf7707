"""ASGI entry point (uvicorn adstudio.asgi:application)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
application = get_asgi_application()

# As adstudio.wsgi: the provider SDKs now, so that no request waits for them.
from conversations.providers.router import load_adapters  # noqa: E402

load_adapters()
