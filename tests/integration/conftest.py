"""Fixtures for database-backed tests of the configuration layer."""

from __future__ import annotations

import pytest

from pools.management.commands.seed_demo import demo_documents
from pools.services import configs
from pools.services.revisions import Actor

CLI = Actor(name="tester", source="cli")


@pytest.fixture
def reference_config(db):
    """Backends, pod templates and validations the seed documents' pools refer to (from the demo data)."""
    for config_type, documents in demo_documents():
        if config_type != "POOL":
            configs.apply_many(config_type, documents, CLI)


@pytest.fixture
def demo_pools(reference_config):
    configs.apply_many("POOL", dict(demo_documents())["POOL"], CLI)
