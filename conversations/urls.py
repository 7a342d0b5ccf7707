from django.urls import path

from conversations.web import api, events_api, history_api, ui_chat_api

urlpatterns = [
    path("ai/generate", api.GenerateView.as_view(), name="generate"),
    path("ads/<uuid:ad_id>/chat", api.ChatView.as_view(), name="ad-chat"),
    path("ads/<uuid:ad_id>/ui-chat", ui_chat_api.UIChatView.as_view(), name="ad-ui-chat"),
    path(
        "ads/<uuid:ad_id>/ui-chat/<str:chat_id>/stream",
        ui_chat_api.UIChatStreamView.as_view(),
        name="ad-ui-chat-stream",
    ),
    path(
        "ads/<uuid:ad_id>/conversation",
        history_api.AdConversationView.as_view(),
        name="ad-conversation",
    ),
    path(
        "ads/<uuid:ad_id>/conversation/ui",
        history_api.AdUIMessagesView.as_view(),
        name="ad-conversation-ui",
    ),
    path(
        "ads/<uuid:ad_id>/conversation/model",
        history_api.AdModelMessagesView.as_view(),
        name="ad-conversation-model",
    ),
    path("runs/<uuid:pk>", api.RunDetailView.as_view(), name="run-detail"),
    path("runs/<uuid:pk>/cancel", api.RunCancelView.as_view(), name="run-cancel"),
    path("runs/<uuid:pk>/events", events_api.RunEventsView.as_view(), name="run-events"),
    path(
        "runs/<uuid:pk>/events/stream",
        events_api.RunEventStreamView.as_view(),
        name="run-event-stream",
    ),
    path(
        "conversations/<uuid:pk>/messages/",
        history_api.ConversationMessagesView.as_view(),
        name="conversation-messages",
    ),
    path(
        "conversations/<uuid:pk>/messages/ui/",
        history_api.ConversationUIMessagesView.as_view(),
        name="conversation-messages-ui",
    ),
    path(
        "conversations/<uuid:pk>/messages/model/",
        history_api.ConversationModelMessagesView.as_view(),
        name="conversation-messages-model",
    ),
    path("stats/", api.StatsView.as_view(), name="stats"),
]
