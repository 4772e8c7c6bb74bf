"""Profile settings (`osmo profile`): read them, change them, and the default pool a submission falls back to.

OSMO's shapes: `GET /api/profile/settings` answers `{"profile": {username, email_notification,
slack_notification, bucket, pool}, "pools": [the pools you may use], "roles": [your roles]}`; a POST carries
any of the profile's fields, a field left out or null is unchanged (as OSMO). A default pool must exist and
be one the caller may submit to (`workflow:Create` on `pool/<name>`); `""` clears it. The portal has no data
buckets, so `bucket` is always null and setting one is refused. Beyond OSMO, a POST may carry `slack_webhook`,
the user's own Slack incoming-webhook URL (`""` clears it; `portal.webhooks`); it is never answered back, only
`slack_webhook_set` on the profile page (`notification_settings`).
"""

from __future__ import annotations

from django.db import transaction

from access import actions, policy, usable_pools
from pools.errors import PoolNotFound
from pools.models import Pool, UserProfile
from portal import webhooks
from portal.errors import DomainError

SWITCHES = ("email_notification", "slack_notification")
FIELDS = ("pool", "bucket", *SWITCHES, "slack_webhook")


def profile_of(user) -> UserProfile:
    """The user's profile, unsaved defaults when they never set one (reading writes nothing)."""
    found = UserProfile.objects.select_related("default_pool").filter(user=user).first()
    return found if found is not None else UserProfile(user=user)


def default_pool(user) -> str | None:
    """The name of the pool the user submits to when they name none; None when unset."""
    if user is None or not user.is_authenticated:
        return None
    return UserProfile.objects.filter(user=user).values_list("default_pool__name", flat=True).first()


def settings_answer(request) -> dict:
    """OSMO's answer for the caller: their profile, the pools they may use, their roles."""
    profile = profile_of(request.user)
    return {
        "profile": {
            "username": request.user.get_username(),
            "email_notification": profile.email_notification,
            "slack_notification": profile.slack_notification,
            "bucket": None,
            "pool": profile.default_pool.name if profile.default_pool else None,
        },
        "pools": sorted(usable_pools.allowed_pools(request)),
        "roles": sorted(policy.principal(request).roles),
    }


def notification_settings(user) -> dict:
    """The profile page's notification settings: the two switches and the webhook, redacted."""
    profile = profile_of(user)
    return {
        "email_notification": profile.email_notification,
        "slack_notification": profile.slack_notification,
        "email": user.email,
        "slack_webhook": webhooks.redacted(profile.slack_webhook),
    }


def update(request, data: object) -> UserProfile:
    """Apply the fields of `data` (a JSON object) to the caller's profile; all or nothing."""
    changes = _checked(request, data)
    with transaction.atomic():
        profile, _ = UserProfile.objects.select_for_update().get_or_create(user=request.user)
        for key, value in changes.items():
            setattr(profile, key, value)
        profile.save()
    return profile


def _checked(request, data: object) -> dict:
    if not isinstance(data, dict):
        raise DomainError("the body must be a JSON object of profile fields", field="", value=data)
    unknown = sorted(set(data) - set(FIELDS) - {"username"})
    if unknown:
        raise DomainError(
            f"not a profile field; expected {', '.join(FIELDS)}", field=unknown[0], value=data[unknown[0]]
        )
    if data.get("username") not in (None, request.user.get_username()):
        raise DomainError("the user name cannot be changed", field="username", value=data["username"])
    if data.get("bucket") is not None:
        raise DomainError("the portal has no data buckets to default to", field="bucket", value=data["bucket"])
    changes: dict = {}
    for key in SWITCHES:
        if data.get(key) is not None:
            if not isinstance(data[key], bool):
                raise DomainError("must be true or false", field=key, value=data[key])
            changes[key] = data[key]
    if data.get("slack_webhook") is not None:
        changes["slack_webhook"] = webhooks.checked(data["slack_webhook"])
    if data.get("pool") is not None:
        changes["default_pool"] = _usable_pool(request, data["pool"])
    return changes


def _usable_pool(request, name: object) -> Pool | None:
    if not isinstance(name, str):
        raise DomainError("must be a pool name", field="pool", value=name)
    if name == "":
        return None
    pool = Pool.objects.filter(name=name).first() if "\x00" not in name else None
    if pool is None:
        raise PoolNotFound.named(name)
    policy.require(
        request,
        actions.WORKFLOW_CREATE,
        actions.pool(name),
        refusal=f"may not make {name!r} their default pool, not being allowed to submit there",
        field="pool",
        value=name,
    )
    return pool
