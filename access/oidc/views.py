"""Sign-in (state, nonce, PKCE), the IdP's callback, logout (POST), and the failure, no-role and signed-out
pages; `urlpatterns` is included under /oidc/ by portal.urls. A refused sign-in ends on a failure page,
never in a server error."""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import auth
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render, resolve_url
from django.urls import NoReverseMatch, path, reverse
from django.views.generic import View
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
    OIDCLogoutView,
)

from access.oidc.configuration import client_id, oidc_enabled, setting
from access.oidc.provider import OIDCError, provider_metadata
from access.oidc.roles import holds_portal_role
from access.services import audit
from configs.revisions import Actor

logger = logging.getLogger(__name__)

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
    configured = setting("OIDC_LOGIN_REDIRECT_URL", "")
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
            logger.warning(
                "OIDC sign-in refused by the provider: %s %s",
                request.GET.get("error"),
                request.GET.get("error_description", ""),
            )
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
    name = user.get_username() if user is not None else "anonymous"
    actor = Actor(name=name, user=user, source="oidc", remote_addr=audit.client_address(request))
    audit.record("auth.login", actor, target=f"user/{name}" if user is not None else "", outcome=outcome, detail=detail)


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
