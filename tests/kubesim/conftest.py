"""Fixtures for the simulated Kubernetes API (kubesim) tested through the official client."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from kubesim import EmulatorServer


def kube_api_client(url: str) -> client.ApiClient:
    """An official ApiClient pointed at ``url`` (what the portal's client factory does in tests)."""
    return client.ApiClient(client.Configuration(host=url))


def wait_until(predicate: Callable[[], Any], timeout: float = 5.0, interval: float = 0.005) -> Any:
    """Poll ``predicate`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s: {predicate}")
        time.sleep(interval)


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
