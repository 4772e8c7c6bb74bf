"""`Authorization: Bearer <token>` for the REST API.

A list of verifiers is tried in order; each takes the presented secret and returns `(user, auth)` when
it recognises the token, None when the token is not its kind (the next verifier is asked), or raises
`AuthenticationFailed` when it is its kind but unusable. Portal API tokens (`pp_…`) come first, then the
JWTs the portal signs in exchange for them (`access.services.jwt_tokens`), then OIDC access tokens.
A token nobody recognises, and an expired, revoked or unknown portal token, answer 401 with the
JSON error envelope.
"""

from __future__ import annotations

from collections.abc import Callable

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from access.services import jwt_tokens, tokens

Verifier = Callable[[str], "tuple[object, object] | None"]


def verify_portal_token(secret: str):
    try:
        token = tokens.verify(secret)
    except tokens.TokenInvalid as error:
        raise exceptions.AuthenticationFailed(str(error)) from None
    return None if token is None else (token.user, token)


def verify_portal_jwt(secret: str):
    """A JWT the portal signed in exchange for an API token: it acts as that token."""
    try:
        token = jwt_tokens.verify(secret)
    except tokens.TokenInvalid as error:
        raise exceptions.AuthenticationFailed(str(error)) from None
    return None if token is None else (token.user, token)


def verify_oidc_token(secret: str):
    """A JWT from the configured OIDC issuer (access.oidc.bearer): None when OIDC is off or it is not one of ours."""
    from access.oidc.bearer import verify_bearer_token

    user = verify_bearer_token(secret)
    return None if user is None else (user, None)


VERIFIERS: list[Verifier] = [verify_portal_token, verify_portal_jwt, verify_oidc_token]


class BearerTokenAuthentication(BaseAuthentication):
    keyword = b"bearer"

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != self.keyword:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("malformed Authorization header; expected: Bearer <token>")
        try:
            secret = parts[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("the token contains invalid characters") from None
        if not secret.isprintable():  # NUL or control characters: no token has them (nor may a query)
            raise exceptions.AuthenticationFailed("the token contains invalid characters")
        for verifier in VERIFIERS:
            result = verifier(secret)
            if result is not None:
                return result
        raise exceptions.AuthenticationFailed("unknown token")

    def authenticate_header(self, request):
        return 'Bearer realm="api"'


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """How the OpenAPI schema describes `BearerTokenAuthentication`."""

    target_class = BearerTokenAuthentication
    name = "bearerToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A portal API token (pp_…, see /tokens/), a JWT exchanged for one, or an OIDC access token.",
        }
