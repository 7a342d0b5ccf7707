"""ASGI entry point (uvicorn adstudio.asgi:application)."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "adstudio.settings")
application = get_asgi_application()
