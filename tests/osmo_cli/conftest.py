"""Fixtures for playing OSMO's client against the portal under gunicorn.

`osmo_server` is one gunicorn per test session serving the pytest database; a test that uses it needs
committed rows (`transactional_db`, which `osmo_login` pulls in). `osmo_login(user, roles)` is
`osmo login URL --method token` with a fresh API token of `user` carrying `roles` (names; by default all
the user holds). `osmo_user(*roles)` makes a user holding those roles (the built-in ones are re-created
first: a transactional test starts from a flushed database)."""

from __future__ import annotations

import pytest

from tests.factories import RoleFactory, TokenFactory, UserFactory
from tests.osmo_cli.client import OsmoClient
from tests.osmo_cli.server import gunicorn


@pytest.fixture(scope="session")
def osmo_server(django_db_setup, django_db_blocker, tmp_path_factory):
    from django.conf import settings
    from django.db import connection

    with gunicorn(
        connection.settings_dict, settings.SECRET_KEY, tmp_path_factory.mktemp("gunicorn") / "error.log"
    ) as server:
        yield server


@pytest.fixture
def osmo_login(osmo_server, transactional_db):
    def login(user, roles: list[str] | None = None) -> OsmoClient:
        names = roles if roles is not None else list(user.groups.values_list("name", flat=True))
        token = TokenFactory(user=user, roles=[RoleFactory(name=name) for name in names])
        return OsmoClient(osmo_server.url, token.secret)

    return login


@pytest.fixture
def osmo_user(transactional_db):
    from access.services.roles import ensure_builtin_roles

    def make(*roles: str, **fields):
        ensure_builtin_roles()
        user = UserFactory(**fields)
        user.groups.add(*(RoleFactory(name=name).group for name in roles))
        return user

    return make
