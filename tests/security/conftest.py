"""Fixtures of the security regression suite: the workflow suite's simulated cluster, pool `batch` and users
(alice and carol: osmo-batch + osmo-user; bob: osmo-user only), reused as they are."""

import pytest

from access.services import roles
from tests.factories import UserFactory
from tests.workflows.conftest import (  # noqa: F401  (pytest finds fixtures by name in a conftest)
    CLI,
    alice,
    api,
    backend,
    batch_role,
    bob,
    carol,
    fast_password_hashing,
    kube_server,
    pool,
    portal_instance,
)


@pytest.fixture
def admin(pool):  # noqa: F811  (the fixture imported above)
    """A platform administrator's API client (osmo-admin), for the tests that write configs."""
    roles.ensure_builtin_roles()
    user = UserFactory(username="platform-admin")
    roles.update_user_roles(user, add=["osmo-admin"], actor=CLI)
    return api(user)
