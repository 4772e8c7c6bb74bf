"""Fixtures of the usage tests: the workflows tests' simulated cluster, backend, pool and submission."""

from tests.workflows.conftest import (  # noqa: F401  (fixtures)
    alice,
    backend,
    batch_role,
    fast_password_hashing,
    kube_server,
    pool,
    portal_instance,
    run_on_commit,
    submitted,
)
from tests.workflows.test_spot_interruption import kube, spot_pool  # noqa: F401  (fixtures)
