"""The schema endpoint under a threaded server: drf-spectacular's first generation in a
process is not thread-safe, so generations take turns."""

from __future__ import annotations

import threading
import time

from django.test import Client
from drf_spectacular.views import SpectacularAPIView
from rest_framework.response import Response


def test_schema_generations_take_turns(monkeypatch):
    # given a generation slow enough for requests to overlap
    inside = most = 0
    counting = threading.Lock()

    def generate(self, request, *args, **kwargs):
        nonlocal inside, most
        with counting:
            inside += 1
            most = max(most, inside)
        time.sleep(0.05)
        with counting:
            inside -= 1
        return Response({"openapi": "3.0.3"})

    monkeypatch.setattr(SpectacularAPIView, "get", generate)
    start = threading.Barrier(4)
    statuses: list[int] = []

    def fetch() -> None:
        client = Client(raise_request_exception=False)
        start.wait(timeout=10)
        statuses.append(client.get("/api/schema/", HTTP_ACCEPT="application/json").status_code)

    # when four clients ask at once
    threads = [threading.Thread(target=fetch) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    # then each got the schema, one generation at a time
    assert statuses == [200] * 4
    assert most == 1
