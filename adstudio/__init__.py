"""AdStudio project package: settings, URLs, the Celery app and the WSGI/ASGI entry points."""

from adstudio.celery import app as celery_app

__all__ = ("celery_app",)
