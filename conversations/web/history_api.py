"""A conversation's messages in the three shapes web clients read, each its own
operation so that a typed client is given the type it reads: this API's messages
(``messages/``), the AI SDK's ``UIMessage``s for ``useChat`` (``messages/ui/``, exactly
what the live stream showed: ``conversations.web.ui_history``) and its ``ModelMessage``s for
``generateText`` (``messages/model/``); the same three for an ad's latest conversation.
``?format=ui`` and ``?format=model`` on the first are still answered, for older clients.
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import generics, serializers
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.response import Response

from conversations.models import Conversation, Message
from conversations.record.messages import history_rows, message_parts, model_messages
from conversations.selectors import conversation_latest, conversations_for
from conversations.web.ui_history import conversation_ui_messages
from conversations.web.ui_types import ModelMessagePage, UIMessagePage
from drafts.selectors import ads_for


class MessageSerializer(serializers.ModelSerializer):
    parts = serializers.SerializerMethodField()
    runId = serializers.UUIDField(source="run_id", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")

    class Meta:
        model = Message
        fields = ["seq", "role", "parts", "runId", "createdAt"]

    @extend_schema_field(
        {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": ["text", "tool-call", "tool-result"]},
                    "text": {"type": "string"},
                    "toolCallId": {"type": "string"},
                    "toolName": {"type": "string"},
                    "args": {"type": "object", "additionalProperties": True},
                    "result": {"type": "object", "additionalProperties": True},
                    "isError": {"type": "boolean"},
                },
                "required": ["type"],
            },
        }
    )
    def get_parts(self, message: Message) -> list[dict]:
        return message_parts(message)


class _MessageFormats(DefaultContentNegotiation):
    """``?format=ui`` and ``?format=model`` choose the messages' shape, not a renderer
    (DRF reads ``format`` as a renderer's name): both are JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        if request.query_params.get("format") in MESSAGE_FORMATS:
            format_suffix = "json"
        return super().select_renderer(request, renderers, format_suffix)


MESSAGE_FORMATS = ("ui", "model")


def model_messages_of(conversation: Conversation) -> list[dict]:
    """What the model is sent of the conversation (its summary aside)."""
    return model_messages(history_rows(conversation_id=conversation.pk, after_seq=0))


PAGE_PARAMETER = OpenApiParameter(
    "page",
    {"type": "integer", "minimum": 1},
    description="A page of 50 messages (from 1).",
    required=False,
)
SHAPES = {"ui": conversation_ui_messages, "model": model_messages_of}


class _OfConversation:
    def get_conversation(self) -> Conversation:
        return get_object_or_404(conversations_for(self.request.user), pk=self.kwargs["pk"])


class _OfAd:
    """The ad's latest conversation."""

    def get_conversation(self) -> Conversation:
        ad = get_object_or_404(ads_for(self.request.user), pk=self.kwargs["ad_id"])
        conversation = conversation_latest(ad_id=ad.pk)
        if conversation is None:
            raise NotFound("This ad has no conversation yet.")
        return conversation


class _Messages(generics.ListAPIView):
    serializer_class = MessageSerializer
    content_negotiation_class = _MessageFormats

    def get_queryset(self):
        return Message.objects.filter(conversation=self.get_conversation()).order_by("seq")

    @extend_schema(responses=MessageSerializer(many=True), summary="Messages, with typed parts")
    def get(self, request: Request, *args, **kwargs) -> Response:
        shape = SHAPES.get(request.query_params.get("format"))
        if shape is None:
            return super().get(request, *args, **kwargs)
        return self.get_paginated_response(self.paginate_queryset(shape(self.get_conversation())))


class _ShapedMessages(generics.GenericAPIView):
    """The conversation's messages in one of the AI SDK's shapes (``shape``), paged."""

    def get(self, request: Request, *args, **kwargs) -> Response:
        messages = self.shape(self.get_conversation())
        return self.get_paginated_response(self.paginate_queryset(messages))


class _UIMessages(_ShapedMessages):
    shape = staticmethod(conversation_ui_messages)

    @extend_schema(
        parameters=[PAGE_PARAMETER],
        responses=UIMessagePage,
        summary="Messages as the AI SDK's UIMessages (useChat's messages)",
    )
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)


class _ModelMessages(_ShapedMessages):
    shape = staticmethod(model_messages_of)

    @extend_schema(
        parameters=[PAGE_PARAMETER],
        responses=ModelMessagePage,
        summary="Messages as the AI SDK's ModelMessages (generateText's messages)",
    )
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)


class ConversationMessagesView(_OfConversation, _Messages):
    pass


class ConversationUIMessagesView(_OfConversation, _UIMessages):
    pass


class ConversationModelMessagesView(_OfConversation, _ModelMessages):
    pass


class AdConversationView(_OfAd, _Messages):
    pass


class AdUIMessagesView(_OfAd, _UIMessages):
    pass


class AdModelMessagesView(_OfAd, _ModelMessages):
    pass
