"""Fixtures of the security regression tests: the workflow tests' simulated cluster, pool `batch` and users."""

from tests.workflows.conftest import (  # noqa: F401  (fixtures used by the tests here)
    alice,
    backend,
    batch_role,
    bob,
    fast_password_hashing,
    kube_server,
    pool,
)
