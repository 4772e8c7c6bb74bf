"""Personal API tokens over REST, on OSMO's paths (what `osmo token set|list|delete` sends):

- `POST|GET|DELETE /api/auth/access_token[/NAME]`: the caller's own tokens; needs `auth:Token` (held
  through `osmo-user`). A token can create tokens, but only with roles it carries itself.
- `POST|GET|DELETE /api/auth/user/USER/access_token[/NAME]`: another user's tokens (`osmo token … --user`),
  for whoever may manage users (`config:Read` / `config:Update` on `config/user`, as the admin's user pages).

Creating answers OSMO's shape: 200 with the secret as a JSON string. Lists carry OSMO's fields
(`token_name`, `description`, `expires_at`, `roles`) next to the portal's.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework.permissions import SAFE_METHODS
from rest_framework.response import Response
from rest_framework.views import APIView

from access import actions, policy
from access.api import serializers as s
from access.api.permissions import PolicyPermission
from access.oidc.cli_login import login_info
from access.services import jwt_tokens, tokens, users
from configs.revisions import Actor
from portal.api import ErrorSerializer
from portal.version import as_osmo_version

ERRORS = {400: ErrorSerializer, 401: ErrorSerializer, 403: ErrorSerializer, 404: ErrorSerializer, 409: ErrorSerializer}


class TokenAPIView(APIView):
    """The caller's own tokens."""

    permission_classes = [PolicyPermission]
    policy_action, policy_resource = actions.AUTH_TOKEN, ""

    def owner(self, request):
        return request.user

    def issuer(self, request):
        """Whose roles bound a new token: the caller's own (a token's subset when it is a token)."""
        return policy.principal(request)


class UserTokenAPIView(TokenAPIView):
    """Another user's tokens: user management, as the admin's user pages."""

    policy_resource = actions.config("user")

    def get_policy_action(self, request):
        return actions.CONFIG_READ if request.method in SAFE_METHODS else actions.CONFIG_UPDATE

    def owner(self, request):
        return users.get(self.kwargs["user_id"])

    def issuer(self, request):
        return None  # the roles must be the owner's (OSMO's admin API checks the target user's roles)


def create_token(view: TokenAPIView, request, name: str) -> Response:
    data = {**request.query_params.dict(), **(request.data if hasattr(request.data, "keys") else {})}
    if len(request.query_params.getlist("roles")) > 1:  # OSMO's CLI repeats the parameter: roles=a&roles=b
        data["roles"] = request.query_params.getlist("roles")
    serializer = s.TokenCreateSerializer(data=data)
    serializer.is_valid(raise_exception=True)
    owner = view.owner(request)
    created = tokens.create(
        owner,
        name,
        roles=serializer.validated_data.get("roles"),
        expires=serializer.validated_data.get("expires_at"),
        description=serializer.validated_data.get("description") or "",
        issuer=view.issuer(request),
        actor=Actor.for_request(request, "api"),
    )
    return Response(created.secret)  # OSMO: 200, the secret as a JSON string


class TokenCollectionView(TokenAPIView):
    @extend_schema(
        parameters=[OpenApiParameter("access_token", str, description="a token's secret: answer that token alone")],
        responses={200: s.TokenSerializer(many=True), **ERRORS},
        summary="Your API tokens (or, with access_token, the one with that secret)",
    )
    def get(self, request, **kwargs):
        owner = self.owner(request)
        if "access_token" in request.query_params:  # `osmo profile list` after a token login: that token
            return Response(tokens.describe(tokens.by_secret(owner, request.query_params["access_token"])))
        return Response([tokens.describe(token) for token in tokens.tokens_of(owner)])


class TokenObjectView(TokenAPIView):
    @extend_schema(
        request=s.TokenCreateSerializer,
        responses={200: OpenApiTypes.STR, **ERRORS},
        summary="Create a token (the answer is the secret, as a JSON string; shown once)",
    )
    def post(self, request, name, **kwargs):
        return create_token(self, request, name)

    @extend_schema(responses={200: s.TokenSerializer, **ERRORS}, summary="One of your tokens")
    def get(self, request, name, **kwargs):
        return Response(tokens.describe(tokens.get(self.owner(request), name)))

    @extend_schema(responses={200: s.TokenSerializer, **ERRORS}, summary="Revoke one of your tokens")
    def delete(self, request, name, **kwargs):
        token = tokens.revoke(self.owner(request), name, Actor.for_request(request, "api"))
        return Response(tokens.describe(token))


class LoginInfoView(APIView):
    """`GET /api/auth/login`: where `osmo login` signs in (access.oidc.cli_login)."""

    authentication_classes = []  # asked before the CLI holds any credential; a stale one must not fail it
    permission_classes = [PolicyPermission]
    policy_action, policy_resource = actions.AUTH_LOGIN, ""

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, summary="Sign-in endpoints for the osmo CLI (LoginInfo)")
    def get(self, request):
        return Response(login_info())


class VersionView(APIView):
    """`GET /api/version` (`osmo version`): the portal's release in OSMO's shape; anyone may ask (osmo-default
    holds `system:Version`), and a stale credential does not fail it."""

    authentication_classes = []
    permission_classes = [PolicyPermission]
    policy_action, policy_resource = actions.SYSTEM_VERSION, ""

    @extend_schema(responses={200: OpenApiTypes.OBJECT}, summary="The service's version (OSMO's Version)")
    def get(self, request):
        return Response(as_osmo_version())


class UserTokenCollectionView(UserTokenAPIView, TokenCollectionView):
    pass


class UserTokenObjectView(UserTokenAPIView, TokenObjectView):
    pass


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
