from rest_framework.routers import SimpleRouter

from accounts.api import TokenViewSet

router = SimpleRouter()
router.trailing_slash = "/?"
router.register("auth/tokens", TokenViewSet, basename="token")

urlpatterns = router.urls
