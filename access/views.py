"""Self-service page for personal API tokens (server-rendered; the pool pages are the selfservice app's)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render, resolve_url
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST

from access import actions, policy, usable_pools
from access.forms import TokenForm
from access.services import tokens
from configs.revisions import Actor
from portal.errors import DomainError, PermissionDenied

TOKEN_ACTION = actions.AUTH_TOKEN


def home(request):
    """Fallback home page: who you are, your roles, your pools. `/` is normally the selfservice catalog
    (included first in portal/urls.py); this keeps `access:home` meaningful without it."""
    context = {"login_url": resolve_url(settings.LOGIN_URL)}
    if request.user.is_authenticated:
        context.update(roles=policy.role_names(request), pools=sorted(usable_pools.allowed_pools(request)))
    return render(request, "access/home.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def token_list(request):
    decision = policy.decide(request, TOKEN_ACTION)
    own_roles = [name for name in policy.role_names(request) if name != policy.DEFAULT_ROLE]
    form, created = TokenForm(role_names=own_roles), None
    if request.method == "POST":
        try:
            policy.require(request, TOKEN_ACTION)  # audits the refusal
        except PermissionDenied:
            messages.error(request, f"Your roles do not allow API tokens ({TOKEN_ACTION}).")
            return redirect("access:tokens")
        form = TokenForm(request.POST, role_names=own_roles)
        if form.is_valid():
            try:
                created = tokens.create(
                    request.user,
                    form.cleaned_data["name"],
                    roles=form.cleaned_data["roles"] or None,
                    expires=form.cleaned_data["expires_at"] and form.cleaned_data["expires_at"].isoformat(),
                    issuer=policy.principal(request),
                    actor=Actor.for_request(request, "page"),
                )
                form = TokenForm(role_names=own_roles)
            except DomainError as error:
                form.add_error(error.field if error.field in form.fields else None, error.reason)
    return render(
        request,
        "access/tokens.html",
        {
            "form": form,
            "created": created,
            "allowed": decision.allowed,
            "tokens": [_row(token) for token in tokens.tokens_of(request.user)],
        },
    )


def _row(token) -> dict:
    """What the page shows of a token: its description, and its times as datetimes (written as "in 3 days",
    "2 hours ago", with the exact time in a title)."""
    ends = min(token.expires_at, token.revoked_at) if token.revoked_at else token.expires_at
    return {
        **tokens.describe(token),
        "expires_at_time": ends,
        "expired": ends <= timezone.now(),
        "last_used_time": token.last_used_at,
    }


@login_required
@require_POST
def token_revoke(request, name):
    try:
        tokens.revoke(request.user, name, Actor.for_request(request, "page"))
        messages.success(request, f"Token {name} revoked.")
    except DomainError as error:
        messages.error(request, str(error))
    return redirect("access:tokens")
