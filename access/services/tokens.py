"""Personal API tokens: create (secret shown once), list, revoke, and verify a presented secret.

A secret is `pp_` + 43 url-safe characters; only its sha256 is stored, with the first characters as a
recognisable prefix. A token expires (at most `TOKEN_MAX_LIFETIME_DAYS` ahead, default 90) and carries
a subset of its owner's roles; what it may do is evaluated as (token roles ∩ owner's current roles),
so it never outgrows its owner.
"""

from __future__ import annotations

import copy
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from access.epoch import EpochCache
from access.models import APIToken, Role
from access.policy import DEFAULT_ROLE, principal
from access.services import audit
from configs.errors import ConfigError
from configs.revisions import Actor
from portal.errors import Conflict, DomainError, NotFound

PREFIX = "pp_"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_RELATIVE_RE = re.compile(r"^([0-9]+)d$")  # ASCII digits: int() refuses `²`
_TOUCH_EVERY = timedelta(minutes=1)


class TokenInvalid(DomainError):
    """A presented secret is unknown, expired or revoked (the API answers 401)."""

    status = 401
    code = "authentication_failed"


@dataclass
class NewToken:
    token: APIToken
    secret: str

    def as_dict(self) -> dict:
        return {"name": self.token.name, "token": self.secret, "expires": self.token.expires_at.isoformat()}


def max_lifetime() -> timedelta:
    return timedelta(days=getattr(settings, "TOKEN_MAX_LIFETIME_DAYS", 90))


def parse_expiry(value: object, now: datetime | None = None) -> datetime:
    """`None` (the maximum), a date `YYYY-MM-DD` (midnight UTC), an ISO datetime, or `<n>d` from now."""
    now = now or timezone.now()
    if value in (None, ""):
        return now + max_lifetime()
    if isinstance(value, datetime):
        expires = value
    else:
        text = str(value).strip()
        relative = _RELATIVE_RE.match(text)
        try:
            if relative and len(relative.group(1)) > 6:  # timedelta overflows past 999,999,999 days
                expires = now + timedelta(days=999_999)  # beyond every lifetime: refused below
            elif relative:
                expires = now + timedelta(days=int(relative.group(1)))
            elif len(text) == 10:
                expires = datetime.combine(datetime.fromisoformat(text).date(), time.min, tzinfo=UTC)
            else:
                expires = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(
                "must be a date (YYYY-MM-DD), an ISO date-time or a number of days such as 30d",
                field="expires_at",
                value=value,
            ) from None
    if timezone.is_naive(expires):
        expires = expires.replace(tzinfo=UTC)
    if expires <= now:
        raise ConfigError("is in the past", field="expires_at", value=str(value))
    if expires > now + max_lifetime() + timedelta(minutes=1):
        raise ConfigError(
            f"is more than {max_lifetime().days} days ahead (TOKEN_MAX_LIFETIME_DAYS)",
            field="expires_at",
            value=str(value),
        )
    return expires


def create(
    owner,
    name: str,
    *,
    roles: list[str] | None = None,
    expires: object = None,
    description: str = "",
    issuer=None,
    actor: Actor | None = None,
) -> NewToken:
    """Create a token for `owner`. `roles` must be held by `issuer` (the principal asking: the owner's
    session, or a token of the owner, whose own subset then bounds the new one); None = all of them."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ConfigError(
            "a token name is 1-128 letters, digits, '_', '.', '-' (starting with a letter or digit)",
            field="name",
            value=name,
        )
    expires_at = parse_expiry(expires)
    available = [role for role in principal(issuer if issuer is not None else owner).roles if role != DEFAULT_ROLE]
    wanted = available if roles is None else [r.strip() for r in roles if r and r.strip()]
    for role in wanted:
        if role not in available:
            raise ConfigError(
                f"you do not hold role {role}; a token can only carry roles its owner holds "
                f"({', '.join(available) or 'none'})",
                field="roles",
                value=role,
            )
    secret = PREFIX + secrets.token_urlsafe(32)
    with transaction.atomic():
        # A revoked or expired token's name may be reused: the audit trail keeps its history.
        APIToken.objects.filter(user=owner, name=name).exclude(
            revoked_at__isnull=True, expires_at__gt=timezone.now()
        ).delete()
        try:
            with transaction.atomic():
                token = APIToken.objects.create(
                    user=owner,
                    name=name,
                    description=description or "",
                    token_hash=digest(secret),
                    prefix=secret[:10],
                    expires_at=expires_at,
                )
        except IntegrityError:
            raise Conflict(
                f"{owner.get_username()} already has a token named {name!r}; revoke it first", field="name", value=name
            ) from None
        token.roles.set(Role.objects.filter(name__in=wanted))
        audit.record(
            "token.create",
            actor or audit.SYSTEM,
            target=f"user/{owner.get_username()}",
            detail={"token": name, "roles": sorted(wanted), "expires": expires_at.isoformat()},
        )
    return NewToken(token, secret)


def tokens_of(owner) -> list[APIToken]:
    return list(APIToken.objects.filter(user=owner).select_related("user").prefetch_related("roles").order_by("name"))


def get(owner, name: str) -> APIToken:
    try:
        return APIToken.objects.select_related("user").prefetch_related("roles").get(user=owner, name=name)
    except APIToken.DoesNotExist:
        raise NotFound(f"{owner.get_username()} has no token named {name!r}", field="name", value=name) from None


def revoke(owner, name: str, actor: Actor | None = None) -> APIToken:
    with transaction.atomic():
        token = get(owner, name)
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            audit.record(
                "token.revoke", actor or audit.SYSTEM, target=f"user/{owner.get_username()}", detail={"token": name}
            )
    return token


def status(token: APIToken, now: datetime | None = None) -> str:
    if token.revoked_at is not None:
        return "revoked"
    return "expired" if token.expires_at <= (now or timezone.now()) else "active"


def describe(token: APIToken) -> dict:
    """The portal's fields, and OSMO's (`user_name`, `token_name`, `expires_at`, `description`): OSMO's
    `expires_at` is when the token stops working, so a revoked token reports its revocation time there."""
    ends = min(token.expires_at, token.revoked_at) if token.revoked_at else token.expires_at
    return {
        "user_name": token.user.get_username(),
        "token_name": token.name,
        "description": token.description,
        "expires_at": ends.isoformat(),
        "name": token.name,
        "prefix": token.prefix,
        "roles": sorted(r.name for r in token.roles.all()),
        "created": token.created_at.isoformat(),
        "expires": token.expires_at.isoformat(),
        "last_used": token.last_used_at.isoformat() if token.last_used_at else None,
        "status": status(token),
    }


def by_secret(owner, secret: str) -> APIToken:
    """One of `owner`'s tokens, named by its secret (OSMO's `GET /api/auth/access_token?access_token=`)."""
    token = verify(secret) if secret else None
    if token is None or token.user_id != owner.pk:
        raise NotFound("no token of yours has this secret", field="access_token", value=secret[:10] or None)
    return token


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


_VERIFIED = EpochCache()  # token hash → token with its owner, per process, while the access epoch holds


def verify(secret: str) -> APIToken | None:
    """The live token for a presented secret; None when it is not a portal token at all (another
    verifier may know it); TokenInvalid when it is a portal token that cannot be used.

    The token row is cached per process (`access.epoch`): revoking it, changing its roles or its owner
    moves the epoch on, so the next request anywhere looks it up again. Callers get their own copy."""
    if not secret.startswith(PREFIX):
        return None
    token_hash = digest(secret)
    return usable(_VERIFIED.lookup(token_hash, lambda: _stored(token_hash)))


def usable(cached: APIToken) -> APIToken:
    """A copy of a (cached) token row, refused when it is revoked, expired or its owner inactive; its last
    use is recorded at most once a minute."""
    token = copy.copy(cached)
    token.user = copy.copy(cached.user)
    now = timezone.now()
    if token.revoked_at is not None:
        raise TokenInvalid(f"token {token.name} was revoked")
    if token.expires_at <= now:
        raise TokenInvalid(f"token {token.name} expired at {token.expires_at:%Y-%m-%d %H:%M} UTC")
    if not token.user.is_active:
        raise TokenInvalid(f"the owner of token {token.name} is inactive")
    if token.last_used_at is None or now - token.last_used_at > _TOUCH_EVERY:
        APIToken.objects.filter(pk=token.pk).update(last_used_at=now)  # not access data: no epoch bump
        token.last_used_at = cached.last_used_at = now
    return token


def _stored(token_hash: str) -> APIToken:
    token = APIToken.objects.select_related("user").filter(token_hash=token_hash).first()
    if token is None:  # raised, not cached: random secrets must not fill the cache
        raise TokenInvalid("unknown token")
    return token
