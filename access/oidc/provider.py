"""The OIDC provider as the portal sees it: its discovery document and signing keys, fetched on first use and
cached, and the local verification of the JWTs it signs (ID tokens and bearer tokens)."""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import jwt
import requests

from access.oidc.configuration import allowed_algorithms, oidc_enabled, setting
from access.oidc.configuration import issuer as configured_issuer
from portal.errors import PortalError

logger = logging.getLogger(__name__)


class OIDCError(PortalError):
    """The provider or a token cannot be trusted. The message is for the log, never shown to users; `code`
    names the failure page they see instead: token | unavailable | refused | account (views._FAILURES)."""

    status = 403

    def __init__(self, message: str, code: str = "token"):
        super().__init__(message, code=code)


def _get_json(url: str) -> dict[str, Any]:
    try:
        response = requests.get(url, timeout=setting("OIDC_TIMEOUT", 10), verify=setting("OIDC_VERIFY_SSL", True))
        response.raise_for_status()
        data = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise OIDCError(f"GET {url} failed: {exc}", code="unavailable") from exc
    if not isinstance(data, dict):
        raise OIDCError(f"GET {url}: expected a JSON object", code="unavailable")
    return data


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str = ""
    end_session_endpoint: str = ""
    device_authorization_endpoint: str = ""  # RFC 8628; what `osmo login` (device code) starts at


@dataclass
class _KeySet:
    fetched_at: float
    keys: list[tuple[str | None, str | None, jwt.PyJWK]] = field(default_factory=list)  # (kid, alg, key)

    def find(self, kid: str | None, alg: str) -> jwt.PyJWK | None:
        candidates = [
            key for key_id, key_alg, key in self.keys if (kid is None or key_id == kid) and key_alg in (None, alg)
        ]
        if kid is None and len(candidates) != 1:
            return None  # without a kid, only an unambiguous key set is usable
        return candidates[0] if candidates else None


lock = threading.Lock()  # guards these caches and the bearer tokens' (bearer.py)
_metadata_cache: dict[str, tuple[float, ProviderMetadata]] = {}
_jwks_cache: dict[str, _KeySet] = {}


def forget_provider() -> None:
    """Forget discovery documents and keys (see bearer.clear_caches)."""
    with lock:
        _metadata_cache.clear()
        _jwks_cache.clear()


def provider_metadata() -> ProviderMetadata:
    """The issuer's discovery document, fetched on first use and cached for OIDC_DISCOVERY_CACHE_SECONDS."""
    if not oidc_enabled():
        raise OIDCError("OIDC is not configured (OIDC_ISSUER is unset)", code="unavailable")
    issuer = configured_issuer()
    now = time.monotonic()
    cached = _metadata_cache.get(issuer)
    if cached and now - cached[0] < setting("OIDC_DISCOVERY_CACHE_SECONDS", 3600):
        return cached[1]
    try:
        doc = _get_json(f"{issuer}/.well-known/openid-configuration")
    except OIDCError:
        if cached:  # the IdP is briefly down: the document we have is still the best answer
            logger.warning("OIDC discovery refresh failed for %s; using the cached document", issuer)
            return cached[1]
        raise
    if str(doc.get("issuer", "")).rstrip("/") != issuer:
        raise OIDCError(f"discovery document names issuer {doc.get('issuer')!r}, expected {issuer!r}", "unavailable")
    try:
        metadata = ProviderMetadata(
            issuer=doc["issuer"],
            authorization_endpoint=doc["authorization_endpoint"],
            token_endpoint=doc["token_endpoint"],
            jwks_uri=doc["jwks_uri"],
            userinfo_endpoint=doc.get("userinfo_endpoint") or "",
            end_session_endpoint=doc.get("end_session_endpoint") or "",
            device_authorization_endpoint=doc.get("device_authorization_endpoint") or "",
        )
    except KeyError as exc:
        raise OIDCError(f"discovery document of {issuer} lacks {exc}", code="unavailable") from exc
    with lock:
        _metadata_cache[issuer] = (now, metadata)
    return metadata


def _fetch_keys(jwks_uri: str) -> _KeySet:
    keyset = _KeySet(fetched_at=time.monotonic())
    for jwk in _get_json(jwks_uri).get("keys", []):
        if not isinstance(jwk, dict) or jwk.get("use", "sig") != "sig":
            continue
        try:
            keyset.keys.append((jwk.get("kid"), jwk.get("alg"), jwt.PyJWK(jwk)))
        except jwt.PyJWTError:
            continue  # a key type or algorithm we do not verify with (e.g. an encryption key)
    with lock:
        _jwks_cache[jwks_uri] = keyset
    return keyset


def signing_key(jwks_uri: str, kid: str | None, alg: str) -> jwt.PyJWK:
    """The issuer's key for `kid`: cached; refetched when too old or when `kid` is unknown (rate-limited)."""
    now = time.monotonic()
    keyset = _jwks_cache.get(jwks_uri)
    if keyset is None or now - keyset.fetched_at > setting("OIDC_JWKS_CACHE_SECONDS", 3600):
        try:
            keyset = _fetch_keys(jwks_uri)
        except OIDCError:
            if keyset is None:
                raise
            logger.warning("JWKS refresh failed for %s; using the cached keys", jwks_uri)
    key = keyset.find(kid, alg)
    if key is None and now - keyset.fetched_at >= setting("OIDC_JWKS_MIN_REFETCH_SECONDS", 10):
        keyset = _fetch_keys(jwks_uri)  # the IdP may have rotated its keys
        key = keyset.find(kid, alg)
    if key is None:
        raise OIDCError(f"no {alg} signing key with kid {kid!r} at {jwks_uri}")
    return key


def decode_token(token: str, *, audiences: set[str], id_token: bool) -> dict[str, Any]:
    """Verify signature, issuer, expiry and audience of a JWT from the configured issuer; return its claims.

    ID token: `aud` must contain our client id (and `azp`, when present, must be it).
    Bearer token: `azp` or one of `aud` must be an accepted audience (Keycloak access tokens carry
    `azp=<client>` and `aud=account`).
    """
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise OIDCError(f"not a JWT: {exc}") from exc
    alg = header.get("alg")
    if alg not in allowed_algorithms():
        raise OIDCError(f"token algorithm {alg!r} is not accepted")
    metadata = provider_metadata()
    key = signing_key(metadata.jwks_uri, header.get("kid"), alg)
    try:
        claims = jwt.decode(
            token,
            key=key,
            algorithms=[alg],
            issuer=metadata.issuer,
            leeway=setting("OIDC_CLOCK_SKEW_SECONDS", 30),
            options={"verify_aud": False, "require": ["exp", "iat", "iss", "sub"]},
        )
    except jwt.PyJWTError as exc:
        raise OIDCError(f"token rejected: {exc}") from exc
    aud = claims.get("aud")
    token_audiences = {aud} if isinstance(aud, str) else {a for a in (aud or []) if isinstance(a, str)}
    azp = claims.get("azp")
    if id_token:
        ok = bool(token_audiences & audiences) and (azp is None or azp in audiences)
    else:
        ok = azp in audiences or bool(token_audiences & audiences)
    if not ok:
        raise OIDCError(f"token audience {sorted(token_audiences)} / azp {azp!r} is not for this portal")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise OIDCError("token has no subject")
    return claims
