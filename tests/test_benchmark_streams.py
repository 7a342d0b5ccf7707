"""The streams benchmark says why each stream it lost was refused: the status and the
API's error code, or the first words of a body that is not the API's error shape."""

from __future__ import annotations

import json

from benchmarks.streams import refusal_reason


def test_a_refusal_is_named_by_its_status_and_error_code():
    body = json.dumps({"error": {"code": "too_many_streams", "message": "Close one."}})

    assert refusal_reason(429, body.encode()) == "429 too_many_streams"


def test_a_body_that_is_not_the_apis_says_its_first_words():
    assert refusal_reason(502, b"<html>\n  Bad   Gateway</html>") == "502 <html> Bad Gateway</html>"
    assert refusal_reason(503, b"") == "503 (empty body)"
    assert refusal_reason(500, b'{"detail": "x"}') == '500 {"detail": "x"}'
