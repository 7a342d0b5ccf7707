"""The OpenAPI schema view, safe under a threaded server.

drf-spectacular resolves its extension classes lazily, on the first schema generation of
a process, and not thread-safely: two first requests at once (gunicorn gthread, after
every start) fail with 500, ``AttributeError: 'NoneType' object has no attribute
'startswith'`` in ``_load_class`` (upstream: tfranzel/drf-spectacular#1122). Generating
one schema at a time per process avoids it; the schema is requested rarely, so nobody
waits for long.
"""

from __future__ import annotations

import threading

from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response

_generating = threading.Lock()


class SchemaView(SpectacularAPIView):
    @extend_schema(exclude=True)  # as SERVE_INCLUDE_SCHEMA=False does for the parent
    def get(self, request: Request, *args, **kwargs) -> Response:
        with _generating:
            return super().get(request, *args, **kwargs)
