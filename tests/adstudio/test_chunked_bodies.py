"""A JSON body sent with ``Transfer-Encoding: chunked`` (no length) is read, by the web
server the product runs on, not taken for an empty one."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from accounts.services import token_create
from drafts.models import Ad


def post_chunked(base: str, path: str, chunks: list[bytes], token: str) -> tuple[int, dict]:
    address = urlsplit(base)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    try:
        connection.request(
            "POST",
            path,
            body=iter(chunks),
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Token {token}",
                "Transfer-Encoding": "chunked",
            },
            encode_chunked=True,
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_a_chunked_json_body_is_read(web_stack, user, settings):
    token = token_create(user=user)[1]
    body = json.dumps({"clientDescription": "Spotify Premium family plan", "language": "th"})
    chunks = [body[:10].encode(), body[10:25].encode(), body[25:].encode()]

    status, answer = post_chunked(web_stack.base, "/api/ads/", chunks, token)

    assert status == 201, answer
    assert Ad.objects.get(pk=answer["id"]).client == "Spotify Premium family plan"


@pytest.mark.django_db(transaction=True)
def test_a_chunked_body_larger_than_any_endpoint_takes_is_a_413(web_stack, user):
    token = token_create(user=user)[1]
    chunk = b" " * 65536
    # The web server's limit: eight times ADSTUDIO_MAX_BODY_BYTES (256 KiB by default).
    chunks = [b'{"clientDescription": "x", "language": "th"', *[chunk] * 33, b"}"]

    status, answer = post_chunked(web_stack.base, "/api/ads/", chunks, token)

    assert status == 413
    assert answer["error"]["code"] == "payload_too_large"
    assert not Ad.objects.exists()
