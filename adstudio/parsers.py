"""The API's JSON parser: bounded body size, and malformed input of every kind (invalid
UTF-8, deep nesting, non-finite numbers) refused as a 400 rather than a 500."""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body too large."
    default_code = "payload_too_large"


def _reject_constant(value: str) -> None:
    raise ValueError(f"{value} is not valid JSON")


class SafeJSONParser(JSONParser):
    def max_bytes(self) -> int:
        return settings.ADSTUDIO_MAX_BODY_BYTES

    def parse(self, stream, media_type=None, parser_context=None):
        limit = self.max_bytes()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"Request body is larger than {limit} bytes.")
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        try:
            text = raw.decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"Request body is not valid {encoding}: {exc.reason}.") from None
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except ValueError as exc:
            raise ParseError(f"JSON parse error: {exc}") from None
        except RecursionError:
            raise ParseError("JSON parse error: the document is nested too deeply.") from None
