"""Suite-wide fixtures. Database tests run on PostgreSQL under `make test` (DATABASE_URL)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.factories import UserFactory


@pytest.fixture
def admin_user(db):
    return UserFactory(username="root-admin", is_staff=True, is_superuser=True)


@pytest.fixture
def admin_api(admin_user) -> APIClient:
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client
