"""Routes of the voice catalogue API (mounted under /api/)."""

from __future__ import annotations

from rest_framework.routers import SimpleRouter

from voices.api import VoiceViewSet

# SimpleRouter: no root view of its own, so /api/ stays free for the project's API root.
router = SimpleRouter()
router.register("voices", VoiceViewSet, basename="voice")

urlpatterns = router.urls
