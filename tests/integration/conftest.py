"""Fixtures for database-backed tests of the configuration layer."""

from __future__ import annotations

import pytest

from configs import store
from configs.revisions import Actor
from pools.management.commands.seed_demo import demo_documents

CLI = Actor(name="tester", source="cli")


@pytest.fixture
def reference_config(db):
    """Backends, pod templates and validations the seed documents' pools refer to (from the demo data)."""
    for config_type, documents in demo_documents():
        if config_type != "POOL":
            store.apply_many(config_type, documents, CLI)


@pytest.fixture
def demo_pools(reference_config):
    store.apply_many("POOL", dict(demo_documents())["POOL"], CLI)
