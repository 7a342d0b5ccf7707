"""One error shape for every API response: ``{"error": {"code", "message", "fields"?}}``.

``fields`` maps each invalid field (dotted path for nested ones) to its messages, so a
client can show the error beside the input that caused it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404, JsonResponse
from django.views import defaults
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from adstudio import observability
from adstudio.parsers import PayloadTooLarge
from adstudio.refusals import NotAllowed, StateConflict


def _flatten(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    if isinstance(detail, dict):
        fields: dict[str, list[str]] = {}
        for key, value in detail.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            fields.update(_flatten(value, path))
        return fields
    if isinstance(detail, list):
        if all(not isinstance(item, dict | list) for item in detail):
            return {prefix or "non_field_errors": [str(item) for item in detail]}
        fields = {}
        for index, item in enumerate(detail):
            fields.update(_flatten(item, f"{prefix}[{index}]" if prefix else f"[{index}]"))
        return fields
    return {prefix or "non_field_errors": [str(detail)]}


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if fields:
        error["fields"] = fields
    return {"error": error}


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"


def _domain_error(exc: Exception) -> exceptions.APIException | None:
    """The HTTP answer to a refusal raised below the API (``adstudio.refusals``)."""
    if isinstance(exc, NotAllowed):
        return exceptions.PermissionDenied(str(exc), code=exc.code)
    if isinstance(exc, StateConflict):
        return Conflict(str(exc), code=exc.code)
    return None


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    exc = _domain_error(exc) or exc
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, RequestDataTooBig):
        # Django refuses a body over DATA_UPLOAD_MAX_MEMORY_SIZE before our parser reads
        # it; without this the client would get Django's HTML 400 page, not the 413.
        limits = (settings.DATA_UPLOAD_MAX_MEMORY_SIZE, settings.ADSTUDIO_MAX_BODY_BYTES)
        limit = min(size for size in limits if size is not None)
        exc = PayloadTooLarge(f"Request body is larger than {limit} bytes.")
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.Throttled):  # every throttled API request ends here
        observability.request_throttled(getattr(context.get("view"), "throttle_scope", ""))
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        first = next(iter(fields.items()), ("", ["Invalid input."]))
        message = first[1][0] if first[0] == "non_field_errors" else f"{first[0]}: {first[1][0]}"
        response.data = error_body("invalid", message, fields)
    else:
        detail = getattr(exc, "detail", str(exc))
        code = getattr(exc, "default_code", "error")
        if isinstance(detail, exceptions.ErrorDetail):
            code = detail.code or code
        response.data = error_body(str(code), str(detail))
    return response


def not_found(request, exception=None):
    """404 for URLs outside any view: JSON under /api/, Django's page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("not_found", "Not found."), status=status.HTTP_404_NOT_FOUND)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if request.path.startswith("/api/"):
        return JsonResponse(
            error_body("server_error", "Internal server error."),
            status=status.HTTP_500_INTERNAL_SERVER_ERROR,
        )
    return defaults.server_error(request)
