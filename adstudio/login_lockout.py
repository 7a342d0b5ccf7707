"""Password logins (the admin's) refused after too many failures: django-axes, with the
client's address as the web server gives it, and the page a locked-out login is answered
with (docs/DEPLOYMENT.md, "Locked-out logins")."""

from __future__ import annotations

import math

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def client_address(request: HttpRequest) -> str | None:
    """The address a failed login is counted against: ``REMOTE_ADDR``, never a header.

    The web server has already replaced its peer's address with the client's when the
    peer is a proxy it trusts (gunicorn's ``FORWARDED_ALLOW_IPS``: uvicorn reads that
    proxy's ``X-Forwarded-For`` from the right, up to the first address it does not
    trust). Reading ``X-Forwarded-For`` again here would believe whatever a client wrote
    in it, and one client could spread its guesses over as many addresses as it likes."""
    return request.META.get("REMOTE_ADDR") or None


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict | None
) -> HttpResponse:
    """429 with ``Retry-After`` (the cool-off, which each refused attempt starts again) and
    a page saying what happened and how it ends, in the admin's style."""
    from axes.helpers import get_cool_off

    cool_off = get_cool_off(request)
    seconds = math.ceil(cool_off.total_seconds()) if cool_off else None
    # Rendered here: axes puts it in place of the view's response, after template
    # responses have been rendered.
    response = render(
        request,
        "adstudio/locked_out.html",
        {
            **admin.site.each_context(request),
            "title": "Too many failed logins",
            "minutes": math.ceil(seconds / 60) if seconds else None,
        },
        status=429,
    )
    if seconds:
        response["Retry-After"] = str(seconds)
    return response
