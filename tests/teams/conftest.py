"""Fixtures for teams tests: the workflow suite's simulated cluster, pool `batch` and users (alice, carol: role
osmo-batch; bob: osmo-user only), plus a team admin and projects."""

from __future__ import annotations

import pytest

from access.services import roles
from tests.factories import DepartmentFactory, ProjectFactory, UserFactory
from tests.workflows.conftest import (  # noqa: F401  (fixtures shared with the workflow tests)
    CLI,
    alice,
    api,
    backend,
    batch_role,
    bob,
    carol,
    fast_password_hashing,
    kube_server,
    pool,
    portal_instance,
    spec,
)


@pytest.fixture
def team_admin(db):
    user = UserFactory(username="tess")
    roles.update_user_roles(user, add=["osmo-admin"], actor=CLI)
    return user


@pytest.fixture
def research(db):
    return DepartmentFactory(name="research", description="Research")


@pytest.fixture
def vision(research):
    return ProjectFactory(name="vision", department=research)


@pytest.fixture
def speech(research):
    return ProjectFactory(name="speech", department=research)


def member(user, *projects):
    roles.update_user_roles(user, add=[project.role.name for project in projects], actor=CLI)
    return user
