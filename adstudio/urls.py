"""Top-level URLs: the admin, the REST API under /api/, and its OpenAPI schema and docs."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerView

from adstudio.observability.views import metrics_view
from adstudio.schema import SchemaView

admin.site.site_header = "AdStudio review desk"
admin.site.site_title = "AdStudio"
admin.site.index_title = "Review desk"
# "View site": this server has no page of its own besides the API, so the API's docs.
admin.site.site_url = "/api/docs/"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="swagger-ui"),
    path("api/", include("accounts.urls")),
    path("api/", include("voices.urls")),
    path("api/", include("conversations.urls")),
    path("api/", include("drafts.urls")),
    path("api/", include("workspaces.urls")),
    path("api/", include("renders.urls")),
    path("metrics", metrics_view, name="metrics"),  # Prometheus; staff or a bearer token
]

handler404 = "adstudio.api_errors.not_found"
handler500 = "adstudio.api_errors.server_error"
