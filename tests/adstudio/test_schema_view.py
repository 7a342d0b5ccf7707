"""The schema endpoint under a threaded server: drf-spectacular's first generation in a
process is not thread-safe, so generations take turns."""

from __future__ import annotations

import threading
import time

from django.test import Client
from django.urls import include, path
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.views import SpectacularAPIView
from rest_framework.response import Response

from adstudio.schema import SchemaView

JSON = "application/vnd.oai.openapi+json"


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


def test_a_process_generates_the_schema_once_until_a_setting_changes(client, monkeypatch, settings):
    generations = []
    generate = SchemaGenerator.get_schema

    def counted(self, *args, **kwargs):
        generations.append(1)
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(SchemaGenerator, "get_schema", counted)
    settings.ROOT_URLCONF = __name__  # the schema and the voices' endpoints only

    def paths(accept: str = JSON) -> set[str]:
        answer = client.get("/api/schema/", HTTP_ACCEPT=accept)
        assert answer.status_code == 200
        if accept.endswith("+json"):
            return set(answer.json()["paths"])
        assert answer["Content-Disposition"] == 'inline; filename="AdStudio API.yaml"'
        return {line.strip(" :") for line in answer.text.splitlines() if line.startswith("  /")}

    # the first request generates it, the next ones in either format are served as kept
    first = paths()
    assert first and all(path.startswith("/api/voices") for path in first)
    assert paths() == first and paths("application/vnd.oai.openapi") == first
    assert len(generations) == 1

    # a changed setting is a new schema
    settings.ROOT_URLCONF = "adstudio.urls"
    assert "/api/ads/" in paths()
    assert len(generations) == 2


def test_a_schema_asked_for_with_a_version_or_a_language_is_never_kept(client, settings):
    from adstudio.schema import _generated

    settings.ROOT_URLCONF = __name__  # a new setting: nothing kept yet
    assert client.get("/api/schema/", HTTP_ACCEPT=JSON).status_code == 200
    assert len(_generated) == 1

    # any text a client sends: each would otherwise be a schema kept for good
    for n in range(3):
        for query in (f"?version=v{n}", f"?lang=x{n}"):
            answer = client.get(f"/api/schema/{query}", HTTP_ACCEPT=JSON)
            assert answer.status_code == 200 and "/api/voices/" in answer.json()["paths"]
    assert len(_generated) == 1


urlpatterns = [
    path("api/schema/", SchemaView.as_view()),
    path("api/", include("voices.urls")),
]
