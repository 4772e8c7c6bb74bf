"""Fixtures of the security regression suite: the workflow suite's simulated cluster, pool `batch` and users
(alice and carol: osmo-batch + osmo-user; bob: osmo-user only), reused as they are."""

from tests.workflows.conftest import (  # noqa: F401  (pytest finds fixtures by name in a conftest)
    alice,
    backend,
    batch_role,
    bob,
    carol,
    fast_password_hashing,
    kube_server,
    pool,
    portal_instance,
)
