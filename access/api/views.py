"""Personal API tokens over REST, on OSMO's path: `POST|GET|DELETE /api/auth/access_token[/NAME]`.

Every call acts on the caller's own tokens and needs `auth:Token` (held through `osmo-user`). A token
can create tokens, but only with roles it carries itself.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions, policy
from access.api import serializers as s
from access.api.permissions import PolicyPermission
from access.services import jwt_tokens, tokens
from configs.revisions import Actor
from portal.api import ErrorSerializer

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer, 409: ErrorSerializer}


class TokenAPIView(APIView):
    permission_classes = [PolicyPermission]
    policy_action, policy_resource = actions.AUTH_TOKEN, ""


class TokenCollectionView(TokenAPIView):
    @extend_schema(responses={200: s.TokenSerializer(many=True), **ERRORS}, summary="Your API tokens")
    def get(self, request):
        return Response([tokens.describe(token) for token in tokens.tokens_of(request.user)])


class TokenObjectView(TokenAPIView):
    @extend_schema(
        request=s.TokenCreateSerializer,
        responses={201: s.NewTokenSerializer, **ERRORS},
        summary="Create a token (the secret is in this response only)",
    )
    def post(self, request, name):
        data = {**request.query_params.dict(), **(request.data if hasattr(request.data, "keys") else {})}
        serializer = s.TokenCreateSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        created = tokens.create(
            request.user,
            name,
            roles=serializer.validated_data.get("roles"),
            expires=serializer.validated_data.get("expires_at"),
            issuer=policy.principal(request),
            actor=Actor.for_request(request, "api"),
        )
        body = {**created.as_dict(), "roles": sorted(role.name for role in created.token.roles.all())}
        return Response(body, status=201)

    @extend_schema(responses={200: s.TokenSerializer, **ERRORS}, summary="One of your tokens")
    def get(self, request, name):
        return Response(tokens.describe(tokens.get(request.user, name)))

    @extend_schema(responses={200: s.TokenSerializer, **ERRORS}, summary="Revoke one of your tokens")
    def delete(self, request, name):
        token = tokens.revoke(request.user, name, Actor.for_request(request, "api"))
        return Response(tokens.describe(token))


class JWTExchangeView(APIView):
    """`osmo login URL --method token` and every later refresh: an API token in, a short-lived JWT out.
    OSMO's client POSTs `{"token": ...}`; OSMO's older servers took `GET ?access_token=...`: both work."""

    authentication_classes: list = []  # the API token in the body is the credential
    permission_classes: list = []

    @extend_schema(
        request=s.JWTExchangeSerializer,
        responses={200: s.JWTSerializer, **ERRORS},
        summary="Exchange an API token for a short-lived JWT",
    )
    def post(self, request):
        body = request.data if hasattr(request.data, "get") else {}
        return Response(jwt_tokens.exchange(body.get("token")))

    @extend_schema(responses={200: s.JWTSerializer, **ERRORS}, summary="The same, OSMO's older spelling")
    def get(self, request):
        return Response(jwt_tokens.exchange(request.query_params.get("access_token")))
