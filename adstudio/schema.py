"""The OpenAPI schema: its view, safe under a threaded server, and the error responses
every operation documents.

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


ERROR_SCHEMA = {
    "type": "object",
    "description": "Every error response: a stable code, a readable message and, for a 400, "
    "the messages of each invalid field (dotted paths for nested fields).",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string"},
                "message": {"type": "string"},
                "fields": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                },
            },
        }
    },
}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: each operation documents the errors it can
    answer, in the one error shape, so clients (and schemathesis) can rely on them."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    throttled = {
        (path, method.lower())
        for path, _regex, method, view in generator.endpoints
        if getattr(view.cls, "throttle_scope", None)
    }
    for path, operations in result["paths"].items():
        for method, operation in operations.items():
            headers = {p["name"] for p in operation.get("parameters", ()) if p["in"] == "header"}
            statuses = {
                "401": "No or invalid credentials.",
                "403": "Not allowed (staff only, or a session write without its CSRF token).",
                "404": "Not found, or not yours (an id in the path or the body, or a page).",
            }
            if operation.get("parameters") or "requestBody" in operation:
                statuses["400"] = "Invalid input; `fields` names each invalid field."
            if "requestBody" in operation:
                statuses["413"] = "The body (or a chat message) is over its size limit."
                statuses["415"] = "The body is not JSON."
            if "Idempotency-Key" in headers:
                statuses["422"] = "The Idempotency-Key was already used with another request."
            if (path, method) in throttled:
                statuses["429"] = "Too many requests of this kind; retry after `Retry-After`."
            for status, description in statuses.items():
                operation["responses"].setdefault(
                    status, {"description": description, "content": error}
                )
    return result
