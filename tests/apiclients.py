"""API clients signed in as a user, for the REST tests (DRF's force_authenticate: no token, no session)."""

from __future__ import annotations

from rest_framework.test import APIClient


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def client_with_roles(username: str, *role_names: str, actor) -> APIClient:
    """A new user holding the built-in roles `role_names` (granted as `actor`), signed in."""
    from access.services import roles
    from tests.factories import UserFactory

    roles.ensure_builtin_roles()
    user = UserFactory(username=username)
    roles.update_user_roles(user, add=list(role_names), actor=actor)
    return client_of(user)
