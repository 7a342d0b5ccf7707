from rest_framework.routers import DefaultRouter

from drafts.api import AdViewSet, DraftViewSet

router = DefaultRouter()
# Both /api/drafts/{id}/activate and .../activate/ work: the web client uses the former.
router.trailing_slash = "/?"
router.register("ads", AdViewSet, basename="ad")
router.register("drafts", DraftViewSet, basename="draft")

urlpatterns = router.urls
