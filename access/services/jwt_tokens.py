"""Short-lived JWTs exchanged for a portal API token, as OSMO's client does at `osmo login --method token`
and again whenever its JWT has expired (`POST /api/auth/jwt/access_token {"token": <api token>}`).

A JWT is signed by the portal (HS256, `JWT_SIGNING_KEY`, derived from SECRET_KEY by default), carries the
token's roles and owner for the client to read, and names the token it came from (`tid`). It is verified
locally, then acts exactly as that token: revoking the token, narrowing its roles or deactivating its
owner takes effect on the JWT's next request, not only when it expires.
"""

from __future__ import annotations

import hashlib
import hmac
import time

import jwt
from django.conf import settings

from access.epoch import EpochCache
from access.models import APIToken
from access.services import tokens

ISSUER = "pool-portal"
AUDIENCE = "pool-portal-api"
ALGORITHM = "HS256"
_BY_ID = EpochCache()  # token id → token with its owner, while the access epoch holds


def signing_key() -> str:
    configured = getattr(settings, "JWT_SIGNING_KEY", "")
    if configured:
        return configured
    return hmac.new(settings.SECRET_KEY.encode(), b"pool-portal jwt signing key", hashlib.sha256).hexdigest()


def exchange(secret: object) -> dict:
    """A JWT for a presented API token: `{"token", "expires_at", "error"}` (OSMO's answer, `expires_at` in
    seconds since the epoch). Never outlives the API token itself."""
    if not isinstance(secret, str) or not secret:
        raise tokens.TokenInvalid("an API token is required", field="token")
    try:
        token = tokens.verify(secret)
    except tokens.TokenInvalid as error:  # unknown, revoked, expired: say which field was at fault
        raise tokens.TokenInvalid(error.reason, field="token") from None
    if token is None:
        raise tokens.TokenInvalid("not a portal API token (they start with pp_)", field="token")
    now = int(time.time())
    expires_at = min(now + settings.JWT_LIFETIME_SECONDS, int(token.expires_at.timestamp()))
    user = token.user
    claims = {
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": user.username,
        "preferred_username": user.username,
        "name": user.get_full_name() or user.username,  # the CLI greets `Welcome <name>`
        "email": user.email,
        "roles": sorted(role.name for role in token.roles.all()),
        "token_name": token.name,
        "tid": token.pk,
        "iat": now,
        "exp": expires_at,
    }
    return {"token": jwt.encode(claims, signing_key(), algorithm=ALGORITHM), "expires_at": expires_at, "error": None}


def is_ours(candidate: str) -> bool:
    """Whether a bearer secret claims to be a portal JWT (unverified: only routes it to `verify`)."""
    if candidate.count(".") != 2:
        return False
    try:
        return jwt.decode(candidate, options={"verify_signature": False}).get("iss") == ISSUER
    except jwt.PyJWTError:
        return False


def verify(candidate: str) -> APIToken | None:
    """The live API token a portal JWT stands for; None when it is not a portal JWT (another verifier may
    know it); TokenInvalid when it is ours but forged, expired, or its token can no longer be used."""
    if not is_ours(candidate):
        return None
    try:
        claims = jwt.decode(candidate, signing_key(), algorithms=[ALGORITHM], audience=AUDIENCE, issuer=ISSUER)
    except jwt.ExpiredSignatureError:
        raise tokens.TokenInvalid("the JWT has expired; exchange the API token for a new one") from None
    except jwt.PyJWTError as error:
        raise tokens.TokenInvalid(f"the JWT is not valid: {error}") from None
    token_id = claims.get("tid")
    if not isinstance(token_id, int):
        raise tokens.TokenInvalid("the JWT names no API token")
    return tokens.usable(_BY_ID.lookup(token_id, lambda: _stored(token_id)))


def _stored(token_id: int) -> APIToken:
    token = APIToken.objects.select_related("user").filter(pk=token_id).first()
    if token is None:
        raise tokens.TokenInvalid("the API token this JWT came from was deleted")
    return token
