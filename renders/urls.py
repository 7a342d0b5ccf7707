from django.urls import path

from renders import api

urlpatterns = [
    path("ads/<uuid:ad_id>/renders", api.AdRendersView.as_view(), name="ad-renders"),
    path("renders/<uuid:pk>", api.RenderDetailView.as_view(), name="render-detail"),
    path("renders/<uuid:pk>/audio", api.RenderAudioView.as_view(), name="render-audio"),
]
