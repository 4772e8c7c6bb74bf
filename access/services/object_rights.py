"""Granting and revoking object rights (`access.policy.register_object_right`): who holds one on an object.

Stored as django-guardian object permissions; `access.policy` is the only reader that decides with them.
Every grant and revocation is audited, and moves the access epoch on (`access.signals`).
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction
from guardian.shortcuts import assign_perm, get_users_with_perms, remove_perm

from access.policy import ObjectRight
from access.services import audit, users
from portal.errors import Conflict


def holders(right: ObjectRight, obj) -> list:
    """Users holding `right` on `obj` directly (not through a group), by username."""
    codename = right.codename.rpartition(".")[2]
    found = get_users_with_perms(obj, attach_perms=True, with_group_users=False, only_with_perms_in=[codename])
    return sorted(found, key=lambda user: user.get_username())


def grant(right: ObjectRight, obj, username: str, actor) -> None:
    user = users.get(username)
    if user in holders(right, obj):
        raise Conflict(f"{username} is already {right.label or 'a holder'} of {obj}", field="username", value=username)
    with transaction.atomic():
        assign_perm(right.codename, user, obj)
        audit.record("access.object_right.grant", actor, target=_target(right, obj, user))


def revoke(right: ObjectRight, obj, user_id: int, actor) -> None:
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None or user not in holders(right, obj):
        raise Conflict(f"that user is not {right.label or 'a holder'} of {obj}", field="user", value=user_id)
    _remove(right, obj, user, actor)


def revoke_username(right: ObjectRight, obj, username: str, actor) -> None:
    """`revoke`, naming the user (the command line and the REST API)."""
    user = users.get(username)
    if user not in holders(right, obj):
        raise Conflict(f"{username} is not {right.label or 'a holder'} of {obj}", field="username", value=username)
    _remove(right, obj, user, actor)


def _remove(right: ObjectRight, obj, user, actor) -> None:
    with transaction.atomic():
        remove_perm(right.codename, user, obj)
        audit.record("access.object_right.revoke", actor, target=_target(right, obj, user))


def _target(right: ObjectRight, obj, user) -> str:
    return f"{right.label or right.codename} of {obj._meta.verbose_name} {obj}: {user.get_username()}"
