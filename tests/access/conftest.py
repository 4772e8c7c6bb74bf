"""Fixtures for access tests: pools with the seed's prefix examples, users holding roles, API clients."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from access.services import roles
from configs.revisions import Actor
from tests.factories import PoolFactory, RoleFactory, UserFactory

ACTOR = Actor(name="tester", source="cli")
# The seed document's prefix rule examples (000_…: "Pool Access Control") plus neighbours.
TEAM_POOLS = ["teamcluster01", "team-cluster-02", "team-gpu-pool"]
OTHER_POOLS = ["myteam-cluster-01", "other-team-pool", "robotics-training", "robotics-inference", "default"]


@pytest.fixture
def seed_pools(db):
    return {name: PoolFactory(name=name) for name in TEAM_POOLS + OTHER_POOLS}


@pytest.fixture
def team_role(db):
    roles.set_pool_role("osmo-team", ACTOR)
    return roles.resolve(["osmo-team"])[0]


@pytest.fixture
def robotics_role(db):
    roles.set_pool_role("osmo-robotics", ACTOR)
    return roles.resolve(["osmo-robotics"])[0]


def holder(*role_names: str, username: str | None = None):
    """A user holding `role_names` (granted through the service, as every door does)."""
    user = UserFactory(**({"username": username} if username else {}))
    roles.update_user_roles(user, add=list(role_names), actor=ACTOR)
    return user


def role(name: str, *policies: dict):
    return RoleFactory(name=name, policies=list(policies))


def allow(actions, resources=("*",)) -> dict:
    return {"effect": "Allow", "actions": list(actions), "resources": list(resources)}


def deny(actions, resources=("*",)) -> dict:
    return {"effect": "Deny", "actions": list(actions), "resources": list(resources)}


def api(user=None, secret: str | None = None) -> APIClient:
    client = APIClient(REMOTE_ADDR="10.1.2.3")
    if secret:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    elif user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Factories hash a password per user; the default hasher would make these tests slow."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


SEEDS = Path(__file__).resolve().parents[1] / "fixtures" / "seeds"


@pytest.fixture
def seed_role() -> dict:
    """The seed document's 6.0 role (002_…), verbatim, odd `http:/api/profile/*` path included."""
    return json.loads((SEEDS / "role_osmo_shared_legacy.json").read_text())
