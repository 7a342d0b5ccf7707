"""The API docs and the admin in a real browser (Debian's Chromium, headless), served by
gunicorn as in production: static files collected, then served by WhiteNoise, and the
docs asking nothing of any host beyond this machine; the static files collected are those
pages link."""

from __future__ import annotations

import httpx
import pytest

from tests.support.browser import log_in, loopback_visit, make_staff


@pytest.mark.django_db(transaction=True)
def test_the_api_docs_render_with_nothing_from_outside(chromium, server):
    with loopback_visit(chromium) as visit:
        response = visit.page.goto(f"{server}/api/docs/", wait_until="networkidle")
        assert response.status == 200
        assert visit.aborted == []
        assert visit.failures() == []

        visit.page.wait_for_selector(".opblock", timeout=20_000)
        assert visit.page.get_by_text("/api/ai/generate", exact=True).count() >= 1
        scripts = [url for _, kind, url in visit.responses if kind == "script"]
        assert any("/static/drf_spectacular_sidecar/swagger-ui-dist/" in u for u in scripts)
        # From a host that is not loopback, Swagger UI would send the schema's URL to
        # swagger.io's validator: ours never does.
        assert visit.page.evaluate("ui.getConfigs().validatorUrl") is None


@pytest.mark.django_db(transaction=True)
def test_the_admin_is_styled_under_gunicorn(chromium, server):
    make_staff("browser-staff", superuser=True)
    assert httpx.get(f"{server}/static/admin/css/base.css").status_code == 200

    with loopback_visit(chromium) as visit:
        page = visit.page
        log_in(page, server, "browser-staff")

        assert page.get_by_text("Review desk").count() >= 1
        stylesheets = [url for _, kind, url in visit.responses if kind == "stylesheet"]
        assert any("/static/admin/css/base." in url for url in stylesheets), stylesheets
        assert visit.failures() == []
        header = page.eval_on_selector("#header", "e => getComputedStyle(e).backgroundColor")
        assert header not in {"rgba(0, 0, 0, 0)", "transparent"}, header
        assert visit.aborted == []


def test_the_static_files_collected_are_those_pages_link(server):
    """Swagger UI's bundle is served precompressed; its source map, read only by developer
    tools, as it is (not compressed again at every collectstatic); ReDoc's bundle, which
    drf-spectacular-sidecar ships and no page links, is not collected."""
    base = f"{server}/static/drf_spectacular_sidecar"
    gzip = {"Accept-Encoding": "gzip"}
    bundle = httpx.get(f"{base}/swagger-ui-dist/swagger-ui-bundle.js", headers=gzip)
    assert bundle.status_code == 200 and bundle.headers.get("content-encoding") == "gzip"
    source_map = httpx.get(f"{base}/swagger-ui-dist/swagger-ui-bundle.js.map", headers=gzip)
    assert source_map.status_code == 200 and "content-encoding" not in source_map.headers
    assert httpx.get(f"{base}/redoc/bundles/redoc.standalone.js").status_code == 404
