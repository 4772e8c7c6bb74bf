"""Users as OSMO's user API shows and changes them (`osmo user list|create|update|get|delete`).

OSMO keeps `created_by` and each role's `assigned_by`/`assigned_at` in its tables; the portal keeps them in
the audit trail (`user.create`, `role.grant` events), which is where they are read from here. `external_id`
is the user's subject at the configured identity provider (`access.models.Identity`), so a user created
with one is the account that provider's sign-in lands on. `last_seen_at` is the later of the last sign-in
and the last use of one of the user's API tokens.
"""

from __future__ import annotations

import re

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import Max, OuterRef, ProtectedError, Subquery, Value
from django.db.models.functions import Concat

from access.models import APIToken, AuditEvent, Identity
from access.oidc.configuration import issuer, oidc_enabled
from access.services import audit, roles, users
from configs.errors import ConfigError
from configs.revisions import Actor
from portal.errors import Conflict, NotFound
from portal.numbers import MAX_PAGE

# OSMO's user id rule (src/lib/utils/common.py USERNAME_REGEX); every such id is also a valid Django username.
USER_ID_RE = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9_.@-]*[a-zA-Z0-9])?$")


def _target(username: str) -> str:
    return f"user/{username}"


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def _annotated():
    target = Concat(Value("user/"), OuterRef("username"))
    created_by = AuditEvent.objects.filter(action="user.create", target=target).order_by("at")
    return (
        get_user_model()
        .objects.select_related("identity")
        .annotate(
            created_by=Subquery(created_by.values("actor_name")[:1]),
            token_last_used=Max("api_tokens__last_used_at"),
        )
    )


def _external_id(user) -> str | None:
    try:
        return user.identity.subject
    except Identity.DoesNotExist:
        return None


def record(user) -> dict:
    """OSMO's `User`: id, created_at, created_by, external_id, last_seen_at (`user` from `_annotated`)."""
    seen = [value for value in (user.last_login, getattr(user, "token_last_used", None)) if value]
    return {
        "id": user.get_username(),
        "created_at": _iso(user.date_joined),
        "created_by": getattr(user, "created_by", None),
        "external_id": _external_id(user),
        "last_seen_at": _iso(max(seen)) if seen else None,
    }


def role_assignments(user) -> list[dict]:
    """OSMO's `UserRole` list: each held role with who granted it and when (its latest `role.grant` event)."""
    held = roles.user_role_names(user)
    granted: dict[str, AuditEvent] = {}
    for event in AuditEvent.objects.filter(action="role.grant", target=_target(user.get_username())).order_by("-at"):
        granted.setdefault(event.detail.get("role"), event)
    return [
        {
            "role_name": name,
            "assigned_by": granted[name].actor_name if name in granted else None,
            "assigned_at": _iso(granted[name].at) if name in granted else None,
        }
        for name in held
    ]


def find(user_id: str):
    """The active user named `user_id`, annotated for `record`; NotFound otherwise."""
    user = _annotated().filter(username=user_id, is_active=True).first()
    if user is None:
        raise NotFound(f"User {user_id} not found", field="user_id", value=user_id)
    return user


def detail(user_id: str) -> dict:
    """OSMO's `UserWithRoles`."""
    user = find(user_id)
    return {**record(user), "roles": role_assignments(user)}


def listing(*, start_index: int = 1, count: int = 100, id_prefix: str | None = None, role_names=()) -> dict:
    """OSMO's `UserListResponse`: active users, newest first, filtered by id prefix and by ANY of `role_names`."""
    start_index, count = max(start_index, 1), min(max(count, 1), MAX_PAGE)
    found = _annotated().filter(is_active=True)
    if id_prefix:
        found = found.filter(username__startswith=id_prefix)
    if role_names:
        matching = get_user_model().objects.filter(groups__role__name__in=list(role_names)).values("pk")
        found = found.filter(pk__in=matching)
    total = found.count()
    page = list(found.order_by("-date_joined", "username")[start_index - 1 : start_index - 1 + count])
    return {
        "total_results": total,
        "start_index": start_index,
        "items_per_page": len(page),
        "users": [record(user) for user in page],
    }


def create(user_id: str, *, role_names=(), external_id: str | None = None, actor: Actor) -> dict:
    if not isinstance(user_id, str) or not USER_ID_RE.match(user_id) or len(user_id) > 150:
        raise ConfigError(
            "a user id is 1-150 letters, digits, '_', '.', '@', '-', starting and ending with a letter or digit",
            field="id",
            value=user_id,
        )
    existing = get_user_model().objects.filter(username=user_id).first()
    if existing is not None and not existing.is_active:
        raise Conflict(
            f"User {user_id} exists but is deactivated (kept for its workflows); reactivate it in the admin",
            field="id",
            value=user_id,
        )
    with transaction.atomic():
        user = users.create(user_id, role_names=role_names or (), actor=actor)
        if external_id:
            link_identity(user, external_id, actor)
    return detail(user_id)


def link_identity(user, external_id: str, actor: Actor) -> None:
    """Make `external_id` the user's subject at the configured identity provider (OSMO's `external_id`)."""
    if not isinstance(external_id, str) or not external_id.strip() or len(external_id) > 255:
        raise ConfigError("must be the user's subject (sub) at the identity provider", "external_id", external_id)
    if not oidc_enabled():
        raise ConfigError(
            "no identity provider is configured (OIDC_ISSUER is unset), so there is nothing to link it to",
            field="external_id",
            value=external_id,
        )
    taken = Identity.objects.filter(issuer=issuer(), subject=external_id).exclude(user=user).first()
    if taken is not None:
        raise Conflict(
            f"external id {external_id!r} already belongs to user {taken.user.get_username()}",
            field="external_id",
            value=external_id,
        )
    try:
        with transaction.atomic():
            Identity.objects.update_or_create(user=user, defaults={"issuer": issuer(), "subject": external_id})
    except IntegrityError:  # a concurrent link of the same subject
        raise Conflict(f"external id {external_id!r} is already linked", "external_id", external_id) from None
    audit.record("user.link", actor, target=_target(user.get_username()), detail={"external_id": external_id})


def update_external_id(user_id: str, external_id: str, actor: Actor) -> dict:
    with transaction.atomic():
        link_identity(find(user_id), external_id, actor)
    return detail(user_id)


def assign_role(user_id: str, role_name: str, actor: Actor) -> dict:
    """OSMO's `UserRoleAssignment`; granting a role the user holds changes nothing (OSMO's is idempotent too)."""
    user = find(user_id)
    roles.update_user_roles(user, add=[role_name], actor=actor)
    assignment = next(item for item in role_assignments(user) if item["role_name"] == role_name)
    return {"user_id": user.get_username(), **assignment}


def remove_role(user_id: str, role_name: str, actor: Actor) -> dict:
    user = find(user_id)
    change = roles.update_user_roles(user, remove=[role_name], actor=actor)
    return {"user_id": user.get_username(), "role_name": role_name, "removed": bool(change.removed)}


def delete(user_id: str, actor: Actor) -> dict:
    """Delete the user with its tokens, roles and identity link. A user who submitted workflows keeps a
    deactivated account (the workflows name it): it can no longer sign in or use the API, holds nothing, and
    is no longer listed."""
    user = find(user_id)
    if actor.user is not None and actor.user.pk == user.pk:
        raise ConfigError("you cannot delete your own account", field="user_id", value=user_id)
    with transaction.atomic():
        roles.set_user_roles(user, [], actor=actor)
        APIToken.objects.filter(user=user).delete()
        Identity.objects.filter(user=user).delete()
        try:
            with transaction.atomic():
                get_user_model().objects.filter(pk=user.pk).delete()
            deleted = True
        except ProtectedError:
            user.is_active = False
            user.set_unusable_password()
            user.save(update_fields=["is_active", "password"])
            deleted = False
        audit.record("user.delete", actor, target=_target(user_id), detail={"deactivated_only": not deleted})
    return {"id": user_id, "deleted": deleted, "deactivated": not deleted}
