"""The workflow suite's fixtures (its simulated cluster, pool `batch`, alice), for the workflow hooks quotas use."""

from tests.workflows.conftest import (  # noqa: F401  (fixtures shared with the workflow tests)
    alice,
    backend,
    batch_role,
    fast_password_hashing,
    kube_server,
    pool,
    portal_instance,
    submitted,
)
