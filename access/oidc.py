"""Sign-in through an OpenID Connect provider (Keycloak in production), and OIDC bearer tokens for the API.

Everything is configured from the issuer's discovery document (`{OIDC_ISSUER}/.well-known/openid-configuration`),
fetched on first use and cached; nothing is fetched at import or start-up. When `OIDC_ISSUER` is unset, OIDC
is off: the views answer 404, `verify_bearer_token` returns None and local accounts work alone.

- Users are matched on (issuer, subject) through `access.models.Identity`, never by e-mail.
- ID tokens and bearer tokens are verified locally (RS256) against the issuer's JWKS, cached, refetched
  when an unknown `kid` shows up (at most once per `OIDC_JWKS_MIN_REFETCH_SECONDS`).
- At every sign-in (and every new bearer token) the groups and roles in the claims go to
  `access.services.roles.sync_roles_from_claims`, which applies each role's sync mode.
- A user who ends up with no portal role sees a 403 page saying so; a refused sign-in ends on a failure
  page, never in a server error.

See docs/oidc.md.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import jwt
import requests
from django.conf import settings
from django.contrib import auth
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import SuspiciousOperation
from django.db import IntegrityError, transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render, resolve_url
from django.urls import NoReverseMatch, path, reverse
from django.utils import timezone
from django.views.generic import View
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
    OIDCLogoutView,
)

from access import claims as claim_utils
from access.models import Identity, Role
from access.oidc_config import oidc_enabled
from access.policy import DEFAULT_ROLE  # held implicitly by everyone: it does not count as "a portal role"

logger = logging.getLogger(__name__)
_ROLE_CLAIMS = ("groups", "realm_access", "resource_access")


class OIDCError(Exception):
    """The provider or a token cannot be trusted. The message is for the log, never shown to users."""

    def __init__(self, message: str, reason: str = "token"):
        super().__init__(message)
        self.reason = reason  # token | unavailable | refused | account


# --------------------------------------------------------------------------- configuration


def _setting(name: str, default: Any) -> Any:
    return getattr(settings, name, default)


def _issuer() -> str:
    return settings.OIDC_ISSUER.rstrip("/")


def client_id() -> str:
    return _setting("OIDC_CLIENT_ID", "")


def _allowed_algorithms() -> list[str]:
    algs = _setting("OIDC_RP_SIGN_ALGO", "RS256")
    algs = [algs] if isinstance(algs, str) else list(algs)
    # Symmetric algorithms and "none" are never accepted: the key would be the client secret or nothing.
    return [alg for alg in algs if alg[:2] in ("RS", "PS", "ES")]


def _get_json(url: str) -> dict[str, Any]:
    try:
        response = requests.get(url, timeout=_setting("OIDC_TIMEOUT", 10), verify=_setting("OIDC_VERIFY_SSL", True))
        response.raise_for_status()
        data = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise OIDCError(f"GET {url} failed: {exc}", reason="unavailable") from exc
    if not isinstance(data, dict):
        raise OIDCError(f"GET {url}: expected a JSON object", reason="unavailable")
    return data


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    userinfo_endpoint: str = ""
    end_session_endpoint: str = ""


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


_lock = threading.Lock()
_metadata_cache: dict[str, tuple[float, ProviderMetadata]] = {}
_jwks_cache: dict[str, _KeySet] = {}
_bearer_cache: OrderedDict[str, tuple[int, float]] = OrderedDict()  # sha256(token) -> (user id, exp)
_BEARER_CACHE_SIZE = 2048


def clear_caches() -> None:
    """Forget discovery documents, keys and verified bearer tokens (tests; key or IdP changes)."""
    with _lock:
        _metadata_cache.clear()
        _jwks_cache.clear()
        _bearer_cache.clear()


def provider_metadata() -> ProviderMetadata:
    """The issuer's discovery document, fetched on first use and cached for OIDC_DISCOVERY_CACHE_SECONDS."""
    if not oidc_enabled():
        raise OIDCError("OIDC is not configured (OIDC_ISSUER is unset)", reason="unavailable")
    issuer = _issuer()
    now = time.monotonic()
    cached = _metadata_cache.get(issuer)
    if cached and now - cached[0] < _setting("OIDC_DISCOVERY_CACHE_SECONDS", 3600):
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
        )
    except KeyError as exc:
        raise OIDCError(f"discovery document of {issuer} lacks {exc}", reason="unavailable") from exc
    with _lock:
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
    with _lock:
        _jwks_cache[jwks_uri] = keyset
    return keyset


def signing_key(jwks_uri: str, kid: str | None, alg: str) -> jwt.PyJWK:
    """The issuer's key for `kid`: cached; refetched when too old or when `kid` is unknown (rate-limited)."""
    now = time.monotonic()
    keyset = _jwks_cache.get(jwks_uri)
    if keyset is None or now - keyset.fetched_at > _setting("OIDC_JWKS_CACHE_SECONDS", 3600):
        try:
            keyset = _fetch_keys(jwks_uri)
        except OIDCError:
            if keyset is None:
                raise
            logger.warning("JWKS refresh failed for %s; using the cached keys", jwks_uri)
    key = keyset.find(kid, alg)
    if key is None and now - keyset.fetched_at >= _setting("OIDC_JWKS_MIN_REFETCH_SECONDS", 10):
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
    if alg not in _allowed_algorithms():
        raise OIDCError(f"token algorithm {alg!r} is not accepted")
    metadata = provider_metadata()
    key = signing_key(metadata.jwks_uri, header.get("kid"), alg)
    try:
        claims = jwt.decode(
            token,
            key=key,
            algorithms=[alg],
            issuer=metadata.issuer,
            leeway=_setting("OIDC_CLOCK_SKEW_SECONDS", 30),
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


def bearer_audiences() -> set[str]:
    return {client_id(), *_setting("OIDC_BEARER_AUDIENCES", [])} - {""}


# --------------------------------------------------------------------------- roles


def holds_portal_role(user) -> bool:
    """True when the user holds a role besides the implicit osmo-default (the superuser flag grants nothing,
    as everywhere in the portal: access.policy)."""
    return Role.objects.filter(group__user=user.pk).exclude(name=DEFAULT_ROLE).exists()


def sync_roles(user, claims: Mapping[str, Any]) -> None:
    """Hand the claims' group and role names to the role service (which applies import/force/ignore).

    A token that carries none of the role claims (`groups`, `realm_access`, `resource_access`) at all says
    nothing about roles, so nothing is synced: an access token minted without the group mapper must not
    strip a user's roles. An empty list is an answer, and is synced.
    """
    if not any(name in claims for name in _ROLE_CLAIMS):
        logger.warning(
            "OIDC claims for %s carry no groups/realm_access/resource_access claim; roles left unchanged "
            "(check the IdP's mappers, docs/oidc.md)",
            user.username,
        )
        return
    from access.services.roles import sync_roles_from_claims  # the role service owns the sync modes

    sync_roles_from_claims(user, claim_utils.external_names(claims, client_id()))


# --------------------------------------------------------------------------- authentication backend


class PortalOIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend with endpoints from discovery, local RS256 checks and (iss, sub) matching."""

    OIDC_RP_IDP_SIGN_KEY = None

    def __init__(self, *args, **kwargs):
        # The parent reads endpoint settings here (and fails without them); ours come from discovery, lazily.
        self.UserModel = get_user_model()
        self.request = None

    # The parent's code reads these attributes; they resolve against discovery and our settings.
    OIDC_RP_CLIENT_ID = property(lambda self: client_id())
    OIDC_RP_CLIENT_SECRET = property(lambda self: _setting("OIDC_CLIENT_SECRET", ""))
    OIDC_RP_SIGN_ALGO = property(lambda self: _allowed_algorithms()[0])
    OIDC_OP_TOKEN_ENDPOINT = property(lambda self: provider_metadata().token_endpoint)
    OIDC_OP_USER_ENDPOINT = property(lambda self: provider_metadata().userinfo_endpoint)
    OIDC_OP_JWKS_ENDPOINT = property(lambda self: provider_metadata().jwks_uri)

    def _fail(self, reason: str) -> None:
        if self.request is not None:
            self.request.oidc_failure = reason

    def authenticate(self, request, **kwargs):
        # Only the callback view passes `nonce`; anything else (the admin's username/password form) is not ours.
        if request is None or "nonce" not in kwargs or not oidc_enabled():
            return None
        try:
            return super().authenticate(request, **kwargs)
        except OIDCError as exc:
            logger.warning("OIDC sign-in refused: %s", exc)
            self._fail(exc.reason)
        except (requests.ConnectionError, requests.Timeout) as exc:
            logger.error("OIDC sign-in failed: the provider cannot be reached: %s", exc)
            self._fail("unavailable")
        except requests.RequestException as exc:
            logger.warning("OIDC sign-in refused: the provider answered %s", exc)
            self._fail("refused")
        except SuspiciousOperation as exc:
            logger.warning("OIDC sign-in refused: %s", exc)
            self._fail("token")
        return None

    def get_user(self, user_id):
        return ModelBackend.get_user(self, user_id)  # the parent's would keep deactivated users signed in

    def verify_token(self, token, **kwargs):
        claims = decode_token(token or "", audiences={client_id()}, id_token=True)
        if _setting("OIDC_USE_NONCE", True) and claims.get("nonce") != kwargs.get("nonce"):
            raise OIDCError("ID token nonce does not match the sign-in request")
        return claims

    def get_userinfo(self, access_token, id_token, payload):
        """The verified ID token's claims, completed by the userinfo endpoint (whose `sub` must match)."""
        claims = dict(payload)
        endpoint = provider_metadata().userinfo_endpoint
        if endpoint and _setting("OIDC_USE_USERINFO", True):
            try:
                response = requests.get(
                    endpoint,
                    headers={"Authorization": f"Bearer {access_token}"},
                    timeout=_setting("OIDC_TIMEOUT", 10),
                    verify=_setting("OIDC_VERIFY_SSL", True),
                )
                response.raise_for_status()
                info = response.json()
            except (requests.RequestException, ValueError) as exc:
                raise OIDCError(f"userinfo failed: {exc}", reason="refused") from exc
            if not isinstance(info, dict) or info.get("sub") != payload.get("sub"):
                raise OIDCError("userinfo subject differs from the ID token's")
            protected = {"iss", "sub", "aud", "azp", "exp", "iat", "nonce"}
            claims.update({k: v for k, v in info.items() if k not in protected})
        if self.request is not None:
            self.request.oidc_received = claim_utils.received_summary(claims, client_id())
        return claims

    def verify_claims(self, claims):
        if not isinstance(claims.get("sub"), str) or not claims["sub"] or claims.get("iss") != provider_metadata().issuer:
            self._fail("account")
            return False
        return True

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(identity__issuer=claims["iss"], identity__subject=claims["sub"])

    def describe_user_by_claims(self, claims):
        return f"subject {claims.get('sub')!r} of {claims.get('iss')!r}"

    def _free_username(self, claims) -> str:
        base = claim_utils.username_base(claims)
        taken = {u.lower() for u in self.UserModel.objects.filter(username__istartswith=base).values_list("username", flat=True)}
        for candidate in claim_utils.username_candidates(base):
            if candidate.lower() not in taken:
                return candidate
        raise OIDCError(f"no free username near {base!r}", reason="account")

    def create_user(self, claims, *, interactive: bool = True):
        for _attempt in range(3):
            try:
                with transaction.atomic():
                    user = self.UserModel(username=self._free_username(claims), **claim_utils.profile_fields(claims))
                    user.set_unusable_password()  # signs in through the IdP only
                    user.save()
                    Identity.objects.create(
                        user=user, issuer=claims["iss"], subject=claims["sub"],
                        last_login_at=timezone.now() if interactive else None,
                    )
            except IntegrityError:
                # A concurrent first sign-in of the same subject, or a username taken meanwhile: look again.
                existing = list(self.filter_users_by_claims(claims))
                if existing:
                    return self.update_user(existing[0], claims, interactive=interactive)
                continue
            logger.info("OIDC: created user %s for %s", user.username, self.describe_user_by_claims(claims))
            sync_roles(user, claims)
            return user
        raise OIDCError("could not create a user", reason="account")

    def update_user(self, user, claims, *, interactive: bool = True):
        """A returning user: the IdP's profile fields (when sent), last sign-in, roles. The username stays."""
        profile = {name: value for name, value in claim_utils.profile_fields(claims).items() if value}
        changed = [name for name, value in profile.items() if getattr(user, name) != value]
        for name in changed:
            setattr(user, name, profile[name])
        if changed:
            user.save(update_fields=changed)
        if interactive:
            Identity.objects.filter(user=user).update(last_login_at=timezone.now())
        sync_roles(user, claims)
        return user

    def user_for_claims(self, claims, *, interactive: bool) -> Any | None:
        """The portal user for verified claims: found by (iss, sub), else created; roles synced."""
        if not self.verify_claims(claims):
            return None
        users = list(self.filter_users_by_claims(claims))
        if users:
            return self.update_user(users[0], claims, interactive=interactive)
        if not _setting("OIDC_CREATE_USER", True):
            return None
        return self.create_user(claims, interactive=interactive)

    def get_or_create_user(self, access_token, id_token, payload):
        claims = self.get_userinfo(access_token, id_token, payload)
        user = self.user_for_claims(claims, interactive=True)
        if user is not None and not user.is_active:
            self._fail("account")
        return user


# --------------------------------------------------------------------------- bearer tokens


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
    with _lock:
        _bearer_cache[digest] = (user.pk, float(claims["exp"]))
        while len(_bearer_cache) > _BEARER_CACHE_SIZE:
            _bearer_cache.popitem(last=False)
    return user


# --------------------------------------------------------------------------- views

_FAILURES = {
    "token": "The identity provider's answer could not be verified.",
    "refused": "The identity provider refused the sign-in.",
    "cancelled": "The sign-in was cancelled at the identity provider.",
    "state": "This sign-in link has expired or was already used.",
    "account": "The identity provider's account could not be used here.",
    "unavailable": "The identity provider cannot be reached right now.",
}


def landing_url(user) -> str:
    """Where a signed-in user goes when the sign-in named no `next`: OIDC_LOGIN_REDIRECT_URL, else the
    portal's home page (who you are, your roles and pools, the way to the console)."""
    configured = _setting("OIDC_LOGIN_REDIRECT_URL", "")
    if configured:
        return resolve_url(configured)
    try:
        return reverse("access:home")
    except NoReverseMatch:
        return reverse("admin:index")


def _require_oidc() -> None:
    if not oidc_enabled():
        raise Http404("OIDC sign-in is not configured")


class PortalAuthenticateView(OIDCAuthenticationRequestView):
    """Starts a sign-in: redirect to the IdP's authorization endpoint (state, nonce, PKCE S256)."""

    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)  # the parent reads endpoint settings here; ours come from discovery

    OIDC_RP_CLIENT_ID = property(lambda self: client_id())
    OIDC_OP_AUTH_ENDPOINT = property(lambda self: provider_metadata().authorization_endpoint)

    def get(self, request):
        _require_oidc()
        try:
            provider_metadata()
        except OIDCError as exc:
            logger.error("OIDC sign-in unavailable: %s", exc)
            return _failure_page(request, "unavailable")
        return super().get(request)


class PortalCallbackView(OIDCAuthenticationCallbackView):
    """The IdP's redirect back: verify, match or create the user, sync roles, then land or explain."""

    @property
    def failure_url(self):
        return reverse("oidc_login_failed")

    @property
    def success_url(self):
        return self.request.session.get("oidc_login_next") or landing_url(self.user)

    def get(self, request):
        _require_oidc()
        states = request.session.get("oidc_states") or {}
        if request.GET.get("error"):
            logger.warning("OIDC sign-in refused by the provider: %s %s",
                           request.GET.get("error"), request.GET.get("error_description", ""))
            request.oidc_failure = "cancelled" if request.GET["error"] == "access_denied" else "refused"
        elif "code" in request.GET and request.GET.get("state") not in states:
            request.oidc_failure = "state"  # expired, replayed or from another browser: not a server error
            return self.login_failure()
        elif "iss" in request.GET:
            try:
                issuer = provider_metadata().issuer
            except OIDCError:
                request.oidc_failure = "unavailable"
                return self.login_failure()
            if request.GET["iss"] != issuer:  # RFC 9207: the answer comes from another issuer (mix-up)
                request.oidc_failure = "token"
                return self.login_failure()
        return super().get(request)

    def login_failure(self):
        if not self.request.user.is_authenticated:
            self.request.session.pop("oidc_id_token", None)  # from a sign-in that did not complete
        reason = getattr(self.request, "oidc_failure", None) or "refused"
        self.request.session["oidc_failure"] = reason
        _audit_login(self.request, None, outcome="denied", detail={"reason": reason})
        return super().login_failure()

    def login_success(self):
        session = self.request.session
        id_token = session.get("oidc_id_token")  # auth.login() flushes the session when the user changes
        response = super().login_success()
        if id_token:
            session["oidc_id_token"] = id_token
        session["oidc_received"] = getattr(self.request, "oidc_received", {})
        has_role = holds_portal_role(self.user)
        _audit_login(self.request, self.user, outcome="ok", detail={"no_portal_role": not has_role})
        if not has_role:
            return HttpResponseRedirect(reverse("oidc_no_role"))
        return response


def _audit_login(request: HttpRequest, user, *, outcome: str, detail: dict[str, Any]) -> None:
    from access.services import audit
    from configs.revisions import Actor

    name = user.get_username() if user is not None else "anonymous"
    actor = Actor(name=name, user=user, source="oidc", remote_addr=audit.client_address(request))
    audit.record("auth.login", actor, target=f"user/{name}" if user is not None else "", outcome=outcome,
                 detail=detail)


def provider_logout_url(request: HttpRequest) -> str:
    """Where logging out sends the browser: the IdP's end_session_endpoint with id_token_hint, or home."""
    target = request.build_absolute_uri(reverse("oidc_signed_out"))
    id_token = request.session.get("oidc_id_token")
    if not oidc_enabled() or not id_token:
        return target  # signed in with a local account: nothing to end at the IdP
    try:
        endpoint = provider_metadata().end_session_endpoint
    except OIDCError:
        return target
    if not endpoint:
        return target
    query = urlencode({"id_token_hint": id_token, "post_logout_redirect_uri": target, "client_id": client_id()})
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{query}"


class PortalLogoutView(OIDCLogoutView):
    """POST only (a GET cannot sign anyone out): local logout, then the IdP's end-session endpoint."""

    @property
    def redirect_url(self):
        return reverse("oidc_signed_out")

    def post(self, request):
        if not request.user.is_authenticated:
            return HttpResponseRedirect(self.redirect_url)
        logout_url = provider_logout_url(request)  # reads the ID token before the session goes
        auth.logout(request)
        return HttpResponseRedirect(logout_url)


def _failure_page(request: HttpRequest, reason: str) -> HttpResponse:
    status = 503 if reason == "unavailable" else 403
    context = {"message": _FAILURES.get(reason, _FAILURES["refused"]), "reason": reason, "oidc_enabled": oidc_enabled()}
    return render(request, "access/login_failed.html", context, status=status)


def login_failed(request: HttpRequest) -> HttpResponse:
    return _failure_page(request, request.session.pop("oidc_failure", "refused"))


def no_role(request: HttpRequest) -> HttpResponse:
    """HTTP 403: signed in, but no portal role. Lists what the IdP sent so an admin can map it."""
    if not request.user.is_authenticated:
        return HttpResponseRedirect(reverse("oidc_authentication_init") if oidc_enabled() else settings.LOGIN_URL)
    if holds_portal_role(request.user):
        return HttpResponseRedirect(landing_url(request.user))
    received = request.session.get("oidc_received") or {}
    context = {
        "received": received,
        "has_received": any(received.get(k) for k in ("groups", "realm_roles", "client_roles")),
        "oidc_enabled": oidc_enabled(),
    }
    return render(request, "access/no_role.html", context, status=403)


def signed_out(request: HttpRequest) -> HttpResponse:
    return render(request, "access/signed_out.html", {"oidc_enabled": oidc_enabled()})


urlpatterns = [
    path("authenticate/", PortalAuthenticateView.as_view(), name="oidc_authentication_init"),
    path("callback/", PortalCallbackView.as_view(), name="oidc_authentication_callback"),
    path("logout/", PortalLogoutView.as_view(), name="oidc_logout"),
    path("failed/", login_failed, name="oidc_login_failed"),
    path("no-role/", no_role, name="oidc_no_role"),
    path("signed-out/", signed_out, name="oidc_signed_out"),
]
