"""``/metrics``: the Prometheus metrics, for users signed in with the statistics'
permission (which its app gives at start) or a scraper holding ``ADSTUDIO_METRICS_TOKEN``
(``Authorization: Bearer <token>``).

A plain Django view, outside the API: no API throttle, authentication class or schema
applies to it. 404 while metrics are off.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client.exposition import choose_encoder

from adstudio.observability import metrics, switch

# The permission a signed-in user needs: the statistics' permission, which its app gives
# at start (``ConversationsConfig.ready``); until then only the bearer token reads.
_permission: str | None = None


def readable_with(permission: str) -> None:
    """Let users holding ``permission`` (``"app_label.codename"``) read the metrics."""
    global _permission
    _permission = permission


def _unauthorized(message: str) -> HttpResponse:
    response = HttpResponse(message, status=401, content_type="text/plain; charset=utf-8")
    response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def _refusal(request: HttpRequest) -> HttpResponse | None:
    """Why the request may not read the metrics, or None if it may."""
    scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        token = settings.ADSTUDIO_METRICS_TOKEN
        # Compared in constant time: the comparison's duration says nothing of the token.
        if token and hmac.compare_digest(credential.strip().encode(), token.encode()):
            return None
        return _unauthorized("Invalid bearer token.\n")
    user = request.user
    if not user.is_authenticated:
        return _unauthorized(
            "Sign in to the admin, or send Authorization: Bearer <ADSTUDIO_METRICS_TOKEN>.\n"
        )
    # The figures span every workspace: the statistics' permission, not being staff.
    if _permission is None or not user.has_perm(_permission):
        return HttpResponse(
            f"Needs the permission {_permission or 'to view the statistics'}.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return None


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    if not switch.metrics:
        raise Http404("Metrics are off (ADSTUDIO_METRICS).")
    refusal = _refusal(request)
    if refusal is not None:
        return refusal
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encoder(metrics.scrape_registry()), content_type=content_type)
