"""Users as the `user` command and the admin see them: create with roles, change roles, describe."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import transaction

from access.services import audit, roles, tokens
from configs.errors import ConfigError
from configs.revisions import Actor
from portal.errors import Conflict, NotFound


def get(username: str):
    try:
        return get_user_model().objects.get(username=username)
    except get_user_model().DoesNotExist:
        raise NotFound(f"no user named {username!r}", field="username", value=username) from None


def create(username: str, *, email: str = "", password: str | None = None, role_names=(), actor: Actor | None = None):
    """A new user holding `role_names`. Without a password the account cannot log in with one
    (OIDC users, or set it later with `changepassword`)."""
    users = get_user_model()
    if not username or len(username) > 150:
        raise ConfigError("a user name is 1-150 characters", field="username", value=username)
    with transaction.atomic():
        if users.objects.filter(username=username).exists():
            raise Conflict(f"user {username!r} already exists; use `user update`", field="username", value=username)
        resolved = roles.resolve(role_names)
        user = users.objects.create_user(username, email or "", password)
        audit.record("user.create", actor or audit.SYSTEM, target=f"user/{username}")
        roles.update_user_roles(user, add=[role.name for role in resolved], actor=actor)
    return user


def describe(user) -> dict:
    return {
        "username": user.get_username(),
        "email": user.email,
        "active": user.is_active,
        "roles": roles.user_role_names(user),
        "tokens": [tokens.describe(token) for token in tokens.tokens_of(user)],
        "last_login": user.last_login.isoformat() if user.last_login else None,
    }
