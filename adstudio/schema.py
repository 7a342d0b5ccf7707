"""The OpenAPI schema: its view, safe under a threaded server and generated once per
process, and the error responses every operation documents: those every operation of a
kind can answer (added by a hook), and the refusals of the domain each operation's view
declares (``refusal_responses``).

drf-spectacular resolves its extension classes lazily, on the first schema generation of
a process, and not thread-safely: two first requests at once (gunicorn gthread, after
every start) fail with 500, ``AttributeError: 'NoneType' object has no attribute
'startswith'`` in ``_load_class`` (upstream: tfranzel/drf-spectacular#1122). Generating
one schema at a time per process avoids it. The schema is public (``SERVE_PUBLIC``: the
same for every caller) and changes only with the code and the settings, so a process
keeps what it generated until a setting changes.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils import translation
from drf_spectacular.utils import OpenApiResponse, extend_schema
from drf_spectacular.views import SpectacularAPIView
from rest_framework.request import Request
from rest_framework.response import Response

from adstudio.refusals import NotAllowed, Refusal, StateConflict

_generating = threading.Lock()
_generated: dict[tuple[str | None, str | None], dict[str, Any]] = {}


@receiver(setting_changed)
def _forget_generated(**kwargs: Any) -> None:
    """A setting may change what the schema says (its limits, its URLs)."""
    _generated.clear()


class SchemaView(SpectacularAPIView):
    @extend_schema(exclude=True)  # as SERVE_INCLUDE_SCHEMA=False does for the parent
    def get(self, request: Request, *args, **kwargs) -> Response:
        with _generating:
            return super().get(request, *args, **kwargs)

    def _get_schema_response(self, request: Request) -> Response:
        # Kept: the schema as clients ask for it, in the language the process is in. One
        # a version or a ``lang`` parameter asks for (any text a client sends) is
        # generated for its request, never kept: a key per such text would grow forever.
        asked = request.query_params
        if not self.serve_public or request.version or "version" in asked or "lang" in asked:
            return super()._get_schema_response(request)
        key = (self.api_version, translation.get_language())
        if key not in _generated:
            response = super()._get_schema_response(request)
            _generated[key] = response.data
            return response
        return Response(
            data=_generated[key],
            headers={
                "Content-Disposition": f'inline; filename="{self._get_filename(request, key[0])}"'
            },
        )


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


def refusal_status(refusal: type[Refusal]) -> int:
    """The HTTP status the API answers ``refusal`` with (``adstudio.api_errors``)."""
    if issubclass(refusal, StateConflict):
        return 409
    if issubclass(refusal, NotAllowed):
        return 403
    raise TypeError(f"{refusal.__name__} is answered by no status: map it in api_errors.")


def refusal_responses(*refusals: type[Refusal]) -> dict[int, OpenApiResponse]:
    """The responses of an operation whose view can raise ``refusals`` (from its services):
    per status, each refusal's ``code`` and what it means (the first line of its
    docstring), in the one error shape (``add_error_responses`` adds the body). A view
    lists here every refusal it can raise, so the schema says every status it answers."""
    lines: dict[int, list[str]] = {}
    for refusal in refusals:
        meaning = (refusal.__doc__ or "").strip().splitlines()[0]
        lines.setdefault(refusal_status(refusal), []).append(f"`{refusal.code}`: {meaning}")
    return {
        status: OpenApiResponse(description="; ".join(described))
        for status, described in lines.items()
    }


def add_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: each operation documents the errors it can
    answer, in the one error shape, so clients (and schemathesis) can rely on them."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    throttled = {
        (_unnamed(path), method.lower())
        for path, _regex, method, view in generator.endpoints
        if getattr(view.cls, "throttle_scope", None)
    }
    # Views that hold a stream (or a long poll) open count towards a user's open streams.
    streaming = {
        (_unnamed(path), method.lower())
        for path, _regex, method, view in generator.endpoints
        if getattr(view.cls, "holds_streams", False)
    }
    for path, operations in result["paths"].items():
        for method, operation in operations.items():
            endpoint = (_unnamed(path), method)
            headers = {p["name"] for p in operation.get("parameters", ()) if p["in"] == "header"}
            statuses = {
                "401": "No or invalid credentials.",
                "403": "Not allowed (staff only, or a session write without its CSRF token).",
                "404": "Not found, or not yours (an id in the path or the body, or a page).",
            }
            if operation.get("parameters") or "requestBody" in operation:
                statuses["400"] = "Invalid input; `fields` names each invalid field."
            if "requestBody" in operation:
                statuses["408"] = "The body did not arrive in time (`request_timeout`)."
                statuses["413"] = "The body (or a chat message) is over its size limit."
                statuses["415"] = "The body is not JSON."
            if "Idempotency-Key" in headers:
                statuses["422"] = "The Idempotency-Key was already used with another request."
            if endpoint in throttled:
                statuses["429"] = "Too many requests of this kind; retry after `Retry-After`."
            if endpoint in streaming:
                statuses["429"] = (
                    "Too many open streams (`too_many_streams`), or requests of this kind "
                    "(`throttled`); retry after `Retry-After`."
                    if endpoint in throttled
                    else "Too many open streams (`too_many_streams`); retry after `Retry-After`."
                )
            statuses["500"] = "A fault of ours (`server_error`), never bad input; logged."
            statuses["503"] = "The database cannot be reached (`database_unavailable`); retry."
            for status, description in statuses.items():
                operation["responses"].setdefault(
                    status, {"description": description, "content": error}
                )
            # Errors a view declares by their description alone (a 409's codes, say).
            for status, response in operation["responses"].items():
                if status[0] in "45" and "content" not in response:
                    response["content"] = error
    return result


def _unnamed(path: str) -> str:
    """``path`` with its parameters unnamed: the endpoints' ``{pk}`` is the schema's
    ``{id}``."""
    return re.sub(r"\{[^}]*\}", "{}", path)


# Text PostgreSQL cannot store, which every text field refuses (DRF's CharField and the
# ui-chat transport): NUL, and lone surrogates, which a pattern cannot portably say (the
# generators that read it break on a surrogate range), so only NUL is declared.
STORABLE_TEXT = "^[^\\u0000]*$"
# A text field that may not be blank (``minLength`` 1: DRF's ``allow_blank=False``) is
# read with the whitespace around it trimmed (DRF's ``trim_whitespace``), so whitespace
# alone is refused: it must hold a character that is not whitespace (``\s`` as Python's
# ``str.strip`` reads it; ECMAScript's differs only on a few control characters).
NON_BLANK_STORABLE_TEXT = "^\\s*[^\\s\\u0000][^\\u0000]*$"


def declare_storable_text(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: each free-text string a request sends (a body
    component's property, a query or header parameter) says that it refuses NUL, and,
    when it may not be blank, whitespace alone, as it does."""
    schemas = result.get("components", {}).get("schemas", {})
    for name, schema in schemas.items():
        if name.endswith("Request"):
            for field in schema.get("properties", {}).values():
                _storable(field)
    for operations in result["paths"].values():
        for operation in operations.values():
            for parameter in operation.get("parameters", ()):
                if parameter["in"] in ("query", "header"):
                    _storable(parameter.get("schema", {}))
    return result


def _storable(schema: dict) -> None:
    if schema.get("type") == "string" and not {"format", "enum", "pattern"} & set(schema):
        blank = schema.get("minLength", 0) < 1
        schema["pattern"] = STORABLE_TEXT if blank else NON_BLANK_STORABLE_TEXT


def optional_without_default(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: a property that may be left out carries its
    default in its description, not as ``default``. Generators of typed clients read a
    component's ``default`` as "always present" (openapi-typescript's
    ``defaultNonNullable``, on by default, makes it required), which for a request body
    (``of`` of a render) or a tool's input as the model sent it is false."""
    for schema in result.get("components", {}).get("schemas", {}).values():
        _without_default(schema)
    return result


def _without_default(node) -> None:
    if isinstance(node, list):
        for item in node:
            _without_default(item)
        return
    if not isinstance(node, dict):
        return
    required = set(node.get("required", ()))
    for name, field in (node.get("properties") or {}).items():
        if isinstance(field, dict) and name not in required and "default" in field:
            default = field.pop("default")
            if default is not None:
                said = f"Default: `{json.dumps(default)}`."
                described = field.get("description")
                field["description"] = f"{described}\n\n{said}" if described else said
    for value in node.values():
        _without_default(value)


def json_schema_as_openapi_30(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: what the pydantic models say in JSON Schema's
    words, in OpenAPI 3.0's: ``anyOf: [X, {"type": "null"}]`` as ``nullable``, ``const``
    as a one-value ``enum``, a number as ``exclusiveMinimum`` as a flag beside
    ``minimum``."""
    for schema in result.get("components", {}).get("schemas", {}).values():
        _as_openapi_30(schema)
    return result


def _as_openapi_30(node):
    if isinstance(node, list):
        for item in node:
            _as_openapi_30(item)
        return
    if not isinstance(node, dict):
        return
    for value in node.values():
        _as_openapi_30(value)
    if "const" in node:
        node["enum"] = [node.pop("const")]
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if not isinstance(node.get(exclusive, False), bool):
            node[bound], node[exclusive] = node[exclusive], True
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [option for option in options if option != {"type": "null"}]
        del node["anyOf"]
        if len(rest) == 1 and "$ref" not in rest[0]:
            node.update(rest[0])
        else:
            node["anyOf" if len(rest) > 1 else "allOf"] = rest
        node["nullable"] = True
