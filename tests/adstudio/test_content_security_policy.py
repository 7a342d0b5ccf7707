"""Every HTML page carries the Content-Security-Policy: no inline script runs unless it
has the response's nonce. (What a browser makes of it: tests/browser/
test_content_security_policy.py.)"""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.test import Client
from django.utils.csp import CSP

from tests.support.settings_module import settings_with

pytestmark = pytest.mark.django_db


def script_src(response) -> str:
    policy = response["Content-Security-Policy"]
    return next(part for part in policy.split("; ") if part.startswith("script-src "))


def assert_strict(response, url: str) -> None:
    assert response.status_code in (200, 429), (url, response.status_code)
    assert response["Content-Type"].startswith("text/html"), url
    scripts = script_src(response)
    assert CSP.UNSAFE_INLINE not in scripts and CSP.UNSAFE_EVAL not in scripts, url
    assert "Content-Security-Policy-Report-Only" not in response, url
    # An inline <script> or <style> of ours carries the header's nonce, and only it.
    nonces = set(re.findall(r"<(?:script|style)[^>]*\snonce=\"([^\"]+)\"", response.text))
    header_nonce = re.search(r"'nonce-([^']+)'", scripts)
    if nonces:
        assert header_nonce and nonces == {header_nonce.group(1)}, url
    inline = re.findall(r"<script(?![^>]*\ssrc=)(?![^>]*\snonce=)[^>]*>", response.text)
    assert inline == [], (url, inline)
    assert not re.search(r"\son[a-z]+=", response.text), url  # no inline event handlers


def test_every_admin_page_carries_a_strict_policy(django_user_model, rf):
    root = django_user_model.objects.create_superuser("root", password="pw-123")
    client = Client()
    client.force_login(root)
    request = rf.get("/admin/")
    request.user = root
    urls = ["/admin/", "/admin/password_change/"]
    for model, model_admin in admin.site._registry.items():
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        urls.append(base)
        if model_admin.has_add_permission(request):
            urls.append(f"{base}add/")

    for url in urls:
        assert_strict(client.get(url), url)
    assert "/admin/axes/accessattempt/" in urls  # the lockouts' pages among them


def test_the_pages_anyone_sees_carry_it_too(settings):
    anonymous = Client()
    assert_strict(anonymous.get("/admin/login/"), "/admin/login/")
    docs = anonymous.get("/api/docs/")
    assert_strict(docs, "/api/docs/")
    assert re.search(r"<script nonce=\"[^\"]+\">", docs.text)  # its inline set-up script

    settings.AXES_FAILURE_LIMIT = 1
    locked = anonymous.post("/admin/login/", {"username": "x", "password": "y"})
    assert locked.status_code == 429
    assert_strict(locked, "the lockout page")


def test_report_only_sends_the_policy_to_report_and_enforces_nothing(settings):
    values = settings_with({"ADSTUDIO_CSP_REPORT_ONLY": "1"})
    assert values["SECURE_CSP"] == {}
    assert values["SECURE_CSP_REPORT_ONLY"] == values["CONTENT_SECURITY_POLICY"]
    settings.SECURE_CSP, settings.SECURE_CSP_REPORT_ONLY = {}, values["SECURE_CSP_REPORT_ONLY"]

    response = Client().get("/admin/login/")

    assert "Content-Security-Policy" not in response
    assert "script-src 'self' 'nonce-" in response["Content-Security-Policy-Report-Only"]
    assert settings_with({})["SECURE_CSP_REPORT_ONLY"] == {}
