"""Fixtures of the operations tests: the workflow suite's simulated cluster, pool and users, and a fresh
cluster answer for every test (`/readyz` caches it per process)."""

import pytest

from portal.ops import health
from tests.workflows.conftest import (  # noqa: F401  (pytest finds fixtures by name in a conftest)
    alice,
    backend,
    batch_role,
    fast_password_hashing,
    kube_server,
    pool,
    portal_instance,
)


@pytest.fixture(autouse=True)
def fresh_cluster_answer():
    health.forget_cluster_answer()
    yield
    health.forget_cluster_answer()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
