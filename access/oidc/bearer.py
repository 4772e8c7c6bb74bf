"""OIDC bearer tokens for the REST API (access/api/authentication.py), checked locally and cached per token."""

from __future__ import annotations

import hashlib
import logging
import time
from collections import OrderedDict

from django.contrib.auth import get_user_model

from access.oidc.backend import PortalOIDCBackend
from access.oidc.configuration import bearer_audiences, oidc_enabled
from access.oidc.provider import OIDCError, decode_token, forget_provider, lock

logger = logging.getLogger(__name__)

_bearer_cache: OrderedDict[str, tuple[int, float]] = OrderedDict()  # sha256(token) -> (user id, exp)
_BEARER_CACHE_SIZE = 2048


def clear_caches() -> None:
    """Forget discovery documents, keys and verified bearer tokens (tests; key or IdP changes)."""
    forget_provider()
    with lock:
        _bearer_cache.clear()


def verify_bearer_token(token: str):
    """The active user an `Authorization: Bearer <jwt>` from the configured issuer stands for, or None.

    Checked locally (signature with the cached JWKS, `iss`, `exp`, `aud`/`azp` = client id or
    OIDC_BEARER_AUDIENCES); no call to the IdP per request. The user is found by (iss, sub) or created,
    and roles are synced from the token's claims once per token.
    """
    if not oidc_enabled() or not isinstance(token, str) or token.count(".") != 2:
        return None
    User = get_user_model()
    digest = hashlib.sha256(token.encode()).hexdigest()
    hit = _bearer_cache.get(digest)
    if hit and hit[1] > time.time():
        return User.objects.filter(pk=hit[0], is_active=True).first()
    try:
        claims = decode_token(token, audiences=bearer_audiences(), id_token=False)
        user = PortalOIDCBackend().user_for_claims(claims, interactive=False)
    except OIDCError as exc:
        logger.info("OIDC bearer token refused: %s", exc)
        return None
    if user is None or not user.is_active:
        return None
    with lock:
        _bearer_cache[digest] = (user.pk, float(claims["exp"]))
        while len(_bearer_cache) > _BEARER_CACHE_SIZE:
            _bearer_cache.popitem(last=False)
    return user
