"""Password sign-in throttling with django-axes (settings `AXES_*`, docs/access.md "Sign-in lockout").

- Counted: every password sign-in (the self-service `/login/`, the admin login): a call to
  `django.contrib.auth.authenticate` with the request and a password. Axes' backend comes first in
  AUTHENTICATION_BACKENDS, so a locked client is refused before any password hash is computed.
- Not counted, never refused: sign-ins that present no password (the OIDC callback); the identity
  provider checks those credentials, and another account's failures must not lock a user out of SSO.
- Delayed, never locked for good (GrowingDelayHandler): an account from one address after
  LOGIN_FAILURE_LIMIT failures, and an address (all accounts) after LOGIN_ADDRESS_FAILURE_LIMIT. Each
  further failure of that pair or address makes it wait LOGIN_FIRST_DELAY_SECONDS, doubled per failure
  past the free ones, at most LOGIN_LOCKOUT_MINUTES, from that failure. No account is refused from every
  address: a guesser elsewhere cannot lock its owner out. During a delay even the right password is
  refused; refused attempts are not counted, so the end that the refusal announces does not move.
  Failures are forgotten LOGIN_FAILURE_MEMORY_HOURS (AXES_COOLOFF_TIME) after the last one.
- Refusal: 429 with `Retry-After`, an HTML page for browsers and the API's JSON error shape for clients
  that ask for JSON.
- The client address is REMOTE_ADDR; with LOGIN_TRUSTED_PROXIES, the right-most X-Forwarded-For hop
  that is not a trusted proxy (the left part of that header is whatever the client sent).
"""

from __future__ import annotations

import ipaddress
import math
from datetime import datetime, timedelta
from functools import lru_cache

from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_cool_off, get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Max, Q, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render, resolve_url
from django.utils import timezone

from access.oidc.configuration import oidc_enabled  # settings only: app loading imports this module
from access.services import audit
from configs.revisions import Actor
from portal.errors import with_osmo_fields

# --------------------------------------------------------------------------- who is signing in, from where


def client_address(request: HttpRequest) -> str | None:
    """The address failures are counted against (AXES_CLIENT_IP_CALLABLE)."""
    peer = _ip(request.META.get("REMOTE_ADDR", ""))
    trusted = _networks(tuple(getattr(settings, "LOGIN_TRUSTED_PROXIES", ())))
    if peer is None or not _within(peer, trusted):
        return None if peer is None else str(peer)
    nearest = peer
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        address = _ip(hop)
        if address is None:  # garbage the client sent: the last address a trusted proxy saw is all we know
            break
        nearest = address
        if not _within(address, trusted):
            break
    return str(nearest)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


@lru_cache(maxsize=8)
def _networks(specs: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(spec, strict=False) for spec in specs)


def _within(address, networks) -> bool:
    return any(address.version == network.version and address in network for network in networks)


def presents_no_password(request: HttpRequest, credentials: dict | None = None) -> bool:
    """AXES_WHITELIST_CALLABLE: a sign-in without a password (OIDC) is neither counted nor refused.

    Axes' backend passes `password=None` when there is none; the failure signal's credentials have no
    `password` key then (and a masked, never-None one for a password sign-in).
    """
    return credentials is not None and credentials.get("password") is None


# --------------------------------------------------------------------------- the refusal


def lockout_response(request: HttpRequest, original_response=None, credentials: dict | None = None) -> HttpResponse:
    """AXES_LOCKOUT_CALLABLE: 429 saying until when, as JSON for API clients, else as a page."""
    until = lockout_ends(request, credentials)
    seconds = max(1, math.ceil((until - timezone.now()).total_seconds()))
    reason = (
        f"too many failed sign-ins for this account or from this address; "
        f"try again after {until.isoformat(timespec='seconds')} (in {seconds} s)"
    )
    if _wants_json(request):
        body = {
            "code": "locked_out",
            "field": "",
            "value": None,
            "reason": reason,
            "retry_after": seconds,
            "locked_until": until.isoformat(timespec="seconds"),
        }
        response = JsonResponse(with_osmo_fields(body, 429), status=429)
    else:
        response = render(
            request,
            "access/locked_out.html",
            {
                "until": until,
                "minutes": math.ceil(seconds / 60),
                "login_url": resolve_url(settings.LOGIN_URL),
                "failure_limit": get_failure_limit(request, credentials),
                "oidc_enabled": oidc_enabled(),
            },
            status=429,
        )
    response["Retry-After"] = str(seconds)
    response["Cache-Control"] = "no-store"
    return response


def lockout_ends(request: HttpRequest, credentials: dict | None = None) -> datetime:
    """When the last running delay on this request's (account, address) pair or address ends."""
    return max((until for _, until in running_delays(request, credentials)), default=timezone.now())


# --------------------------------------------------------------------------- growing delays


class GrowingDelayHandler(AxesDatabaseHandler):
    """AXES_HANDLER: axes' database records, read as growing delays instead of a fixed lockout.

    Axes refuses a sign-in (and answers the failure that starts a delay with the lockout response) when
    `get_failures` reaches the failure limit; here it does exactly while a delay runs.
    """

    def get_failures(self, request, credentials: dict | None = None) -> int:
        counts = [count for count, _ in running_delays(request, credentials)]
        return max(*counts, get_failure_limit(request, credentials)) if counts else 0


def running_delays(request: HttpRequest, credentials: dict | None = None) -> list[tuple[int, datetime]]:
    """(failures, end) of each delay running for the request's (account, address) pair and address."""
    remembered_since = timezone.now() - (get_cool_off(request) or timedelta(0))
    address = getattr(request, "axes_ip_address", None)
    pair = Q(username=get_client_username(request, credentials))
    totals = AccessAttempt.objects.filter(ip_address=address, attempt_time__gte=remembered_since).aggregate(
        pair=Sum("failures_since_start", filter=pair),
        pair_last=Max("attempt_time", filter=pair),
        address=Sum("failures_since_start"),
        address_last=Max("attempt_time"),
    )
    keys = (
        (totals["pair"], totals["pair_last"], settings.LOGIN_FAILURE_LIMIT),
        (totals["address"], totals["address_last"], settings.LOGIN_ADDRESS_FAILURE_LIMIT),
    )
    delays = [(count, last + delay_after(count - free)) for count, last, free in keys if (count or 0) >= free]
    return [(count, until) for count, until in delays if until > timezone.now()]


def delay_after(failures_past_free: int) -> timedelta:
    """The wait after the failure that is `failures_past_free` past the free ones (0: the first delay)."""
    longest = timedelta(minutes=settings.LOGIN_LOCKOUT_MINUTES)
    first = timedelta(seconds=settings.LOGIN_FIRST_DELAY_SECONDS)
    return min(longest, first * 2 ** min(failures_past_free, 32))


def _wants_json(request: HttpRequest) -> bool:
    if request.path.startswith("/api/") or request.headers.get("X-Requested-With") == "XMLHttpRequest":
        return True
    accept = request.headers.get("Accept", "")
    return "application/json" in accept and "text/html" not in accept


# --------------------------------------------------------------------------- audit


def audit_lockout(sender, request=None, username=None, ip_address=None, **kwargs) -> None:
    """`axes.signals.user_locked_out` receiver: one audit event when a lockout begins.

    Axes sends the signal for the failure that locks and again for every refused attempt during the
    lockout; only the first has a failure count (the refused ones are not counted).
    """
    if request is None or getattr(request, "axes_failures_since_start", None) is None:
        return
    source = "admin" if request.path.startswith(resolve_url("admin:index")) else "page"
    actor = Actor(name=(username or "anonymous")[:150], source=source, remote_addr=ip_address)
    audit.record(
        "auth.lockout",
        actor,
        target=f"user/{username}" if username else "",
        outcome="denied",
        detail={
            "path": request.path[:500],
            "failures": request.axes_failures_since_start,
            "until": lockout_ends(request, getattr(request, "axes_credentials", None)).isoformat(),
        },
    )
