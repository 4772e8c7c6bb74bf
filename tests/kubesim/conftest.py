"""Fixtures for the simulated Kubernetes API (kubesim) tested through the official client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from kubesim import EmulatorServer
from tests.polling import wait_until  # noqa: F401  (the tests import it from here)


def kube_api_client(url: str) -> client.ApiClient:
    """An official ApiClient pointed at ``url`` (what the portal's client factory does in tests)."""
    return client.ApiClient(client.Configuration(host=url))


@pytest.fixture
def kube_emulator() -> Iterator[EmulatorServer]:
    """A fresh simulated apiserver on 127.0.0.1 (random port) for one test."""
    with EmulatorServer(host="127.0.0.1", port=0) as server:
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


@pytest.fixture
def api(kube_emulator: EmulatorServer) -> Iterator[client.ApiClient]:
    with kube_api_client(kube_emulator.url) as api_client:
        yield api_client


@pytest.fixture
def v1(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)
