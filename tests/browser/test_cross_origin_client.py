"""A web client on another origin, in Chromium: a page served from 127.0.0.2 calls the API
on gunicorn at 127.0.0.1 (CORS_ALLOWED_ORIGINS naming the page's origin) with its token,
reads the headers the API documents (Location, Retry-After, X-Request-ID), and follows a
run's events with fetch and a stream reader, as docs/api.md shows ("Cross-origin
clients")."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator

import httpx
import pytest
from playwright.sync_api import sync_playwright

from accounts.services import token_create
from conversations.models import RunEvent
from tests.support.web import WebServer
from tests.support.worker import database_url

# The page's script: what docs/api.md's example does, reporting what it read.
APP = """<!doctype html><meta charset="utf-8"><title>studio</title><script>
async function followRun(api, runId, headers, onEvent) {
  const response = await fetch(`${api}/api/runs/${runId}/events/stream`, { headers });
  if (response.status === 204) return;
  if (!response.ok) throw new Error(`stream: ${response.status}`);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\\n\\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let type = "message", data = "";
      for (const line of block.split("\\n")) {
        if (line.startsWith("event: ")) type = line.slice(7);
        else if (line.startsWith("data: ")) data += line.slice(6);
      }
      if (data) onEvent(type, JSON.parse(data));
    }
  }
}

window.studio = async (api, token, adId) => {
  const headers = { Authorization: `Token ${token}` };
  const post = () => fetch(`${api}/api/ai/generate`, {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: JSON.stringify({ adId }),
  });
  const first = await post();
  const started = await first.json();
  const second = await post();  // past ADSTUDIO_RUN_RATE
  const types = [];
  await followRun(api, started.runId, headers, (type, event) => types.push(type));
  return {
    firstStatus: first.status,
    location: first.headers.get("Location"),
    requestId: first.headers.get("X-Request-ID"),
    runId: started.runId,
    secondStatus: second.status,
    retryAfter: second.headers.get("Retry-After"),
    types,
  };
};
</script>"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def do_GET(self) -> None:
        body = APP.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def page_origin() -> Iterator[str]:
    """The client's page, served from 127.0.0.2 (another origin than the API's)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.2", 0), functools.partial(_Quiet))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.2:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def api(page_origin, tmp_path) -> Iterator[str]:
    """gunicorn as deployed, allowing the page's origin; runs made in-process by the
    offline demo director (no broker); one generate per minute."""
    web = WebServer(
        env={
            "DATABASE_URL": database_url(),
            "DEBUG": "0",
            "STATIC_ROOT": str(tmp_path / "static"),
            "CORS_ALLOWED_ORIGINS": page_origin,
            "ADSTUDIO_RUN_RATE": "1/minute",
        },
        log=tmp_path / "web.log",
    )
    web.start(ready_path="/healthz")
    yield web.base
    web.stop()
    print(f"gunicorn's log:\n{(tmp_path / 'web.log').read_text()}")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_preflight_allows_the_token_and_the_idempotency_key(api, page_origin):
    answer = httpx.options(
        f"{api}/api/ai/generate",
        headers={
            "Origin": page_origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, idempotency-key",
        },
    )

    assert answer.status_code == 200
    assert answer.headers["access-control-allow-origin"] == page_origin
    allowed = answer.headers["access-control-allow-headers"]
    assert {"authorization", "content-type", "idempotency-key"} <= set(allowed.split(", "))
    refused = httpx.options(
        f"{api}/api/ai/generate",
        headers={"Origin": "http://127.0.0.3:1", "Access-Control-Request-Method": "POST"},
    )
    assert "access-control-allow-origin" not in refused.headers


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_page_on_another_origin_reads_the_headers_and_streams_a_run(
    chromium, api, page_origin, user, make_ad
):
    _, token = token_create(user=user)
    ad = make_ad(language="en", market="US", title="Family plan, US")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), headless=True)
        try:
            page = browser.new_page()
            page.goto(f"{page_origin}/")
            seen = page.evaluate(
                "([api, token, ad]) => studio(api, token, ad)", [api, token, str(ad.pk)]
            )
        finally:
            browser.close()

    assert seen["firstStatus"] == 202
    assert seen["location"] == f"/api/runs/{seen['runId']}"
    assert seen["requestId"] and len(seen["requestId"]) >= 16
    assert seen["secondStatus"] == 429
    assert int(seen["retryAfter"]) >= 1
    stored = RunEvent.objects.filter(run_id=seen["runId"]).order_by("seq")
    assert seen["types"] == list(stored.values_list("type", flat=True))  # every one, in order
    assert seen["types"][0] == "run.started"
    assert seen["types"][-1] == "run.finished"
