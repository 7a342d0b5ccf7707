"""REST endpoints for a person's own API tokens: list them, make one (from a signed-in
session only: a token cannot make another, so a leaked token dies at its expiry), read
one and revoke one. The token itself is in the answer that makes it, and nowhere else."""

from __future__ import annotations

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from accounts.models import ApiToken
from accounts.selectors import tokens_live
from accounts.services import token_create, token_revoke
from adstudio.serializers import InputSerializer


class TokenSerializer(serializers.ModelSerializer):
    createdAt = serializers.DateTimeField(source="created_at")
    expiresAt = serializers.DateTimeField(source="expires_at")
    lastUsedAt = serializers.DateTimeField(
        source="last_used_at", allow_null=True, help_text="To the minute."
    )
    current = serializers.SerializerMethodField(
        help_text="Whether this is the token the request was made with."
    )
    prefix = serializers.CharField(help_text="The token's first characters, to recognise it.")

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "createdAt", "expiresAt", "lastUsedAt", "current"]

    def get_current(self, token: ApiToken) -> bool:
        auth = self.context["request"].auth
        return isinstance(auth, ApiToken) and auth.pk == token.pk


class TokenCreatedSerializer(TokenSerializer):
    token = serializers.CharField(
        help_text="The token, shown this once: only its digest is kept. Send it as "
        "`Authorization: Token <token>`."
    )

    class Meta(TokenSerializer.Meta):
        fields = [*TokenSerializer.Meta.fields, "token"]


class TokenInputSerializer(InputSerializer):
    name = serializers.CharField(
        max_length=100, required=False, allow_blank=True, help_text="What the token is for."
    )


class SessionRequired(PermissionDenied):
    default_detail = (
        "Tokens are made from a signed-in session (or with manage.py create_api_token), "
        "not with another token."
    )
    default_code = "session_required"


@extend_schema_view(
    list=extend_schema(summary="Your tokens that still work (neither expired nor revoked)"),
    retrieve=extend_schema(summary="One of your tokens"),
    destroy=extend_schema(summary="Revoke one of your tokens", responses={204: OpenApiResponse()}),
)
class TokenViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = TokenSerializer

    def get_queryset(self) -> QuerySet[ApiToken]:
        return tokens_live(user=self.request.user)

    @extend_schema(
        request=TokenInputSerializer,
        responses={201: TokenCreatedSerializer},
        summary="Make a token (from a signed-in session)",
    )
    def create(self, request: Request) -> Response:
        if not isinstance(request.successful_authenticator, SessionAuthentication):
            raise SessionRequired
        data = TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token, secret = token_create(user=request.user, name=data.validated_data.get("name", ""))
        token.token = secret
        body = TokenCreatedSerializer(token, context=self.get_serializer_context()).data
        # The token is in this answer alone: no cache may keep it.
        return Response(body, status=status.HTTP_201_CREATED, headers={"Cache-Control": "no-store"})

    def perform_destroy(self, instance: ApiToken) -> None:
        token_revoke(token=instance)
