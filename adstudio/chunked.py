"""Request bodies sent without a length (``Transfer-Encoding: chunked``), for WSGI.

Django reads a body by its ``Content-Length``; without one it reads nothing, so a chunked
JSON body would arrive as ``{}`` and be refused for fields it does carry. This middleware
reads such a body first (gunicorn decodes the chunks), up to the largest body any
endpoint takes, and gives Django its length; a longer one is refused with 413.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable


class ChunkedBodies:
    def __init__(self, app: Callable, *, max_bytes: Callable[[], int]) -> None:
        self.app = app
        self.max_bytes = max_bytes  # read per request: settings may change in tests

    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if chunked and not environ.get("CONTENT_LENGTH"):
            limit = self.max_bytes()
            body = environ["wsgi.input"].read(limit + 1)
            if len(body) > limit:
                return _too_large(start_response, limit)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return self.app(environ, start_response)


def _too_large(start_response: Callable, limit: int) -> list[bytes]:
    body = json.dumps(
        {
            "error": {
                "code": "payload_too_large",
                "message": f"Request body is larger than {limit} bytes.",
            }
        }
    ).encode()
    start_response(
        "413 Request Entity Too Large",
        [
            ("Content-Type", "application/json"),
            ("Content-Length", str(len(body))),
            ("Connection", "close"),  # the rest of the body is not read
        ],
    )
    return [body]
