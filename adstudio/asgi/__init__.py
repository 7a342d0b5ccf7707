"""The ASGI application, the web processes' entry in production
(``gunicorn adstudio.asgi:application --worker-class uvicorn_worker.UvicornWorker``), and
what it is made of: the probes (``health.py``), request bodies bounded in size and time
(``bodies.py``) and each request sent to Django's ASGI or WSGI handler by its view
(``routing.py``), put together in ``stack.py``.

``application`` is built when it is first asked for (the server's import of it), not when
the package is imported: every process's middleware imports ``adstudio.asgi.health``, and
a management command builds no web application (which would load the provider SDKs).
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "application":
        from adstudio.asgi.stack import application

        return application
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
