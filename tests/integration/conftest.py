"""Fixtures for database-backed tests of the configuration layer."""

from __future__ import annotations

import pytest

from pools.management.commands.seed_demo import DEMO_DIR
from pools.services import configs
from pools.services.revisions import Actor
from portal.docfiles import load_document

CLI = Actor(name="tester", source="cli")


@pytest.fixture
def reference_config(db):
    """Backends, pod templates and validations the seed documents' pools refer to (from the demo data)."""
    for config_type, filename in (("BACKEND", "backends.yaml"), ("POD_TEMPLATE", "pod_templates.yaml"),
                                  ("RESOURCE_VALIDATION", "resource_validations.yaml")):
        configs.apply_many(config_type, load_document(DEMO_DIR / filename), CLI)


@pytest.fixture
def demo_pools(reference_config):
    configs.apply_many("POOL", load_document(DEMO_DIR / "pools.json"), CLI)
