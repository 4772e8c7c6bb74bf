"""The REST API takes tokens (portal or OIDC) and sessions, never passwords (issue #18 item 4).

HTTP Basic made every anonymous request cost a password hash (about 0.64 s) and offered a password oracle
without any lockout; it is gone.
"""

from __future__ import annotations

import base64

import pytest
from rest_framework.test import APIClient

from access.services import roles, tokens
from configs.revisions import Actor
from tests.factories import UserFactory
from tests.security.passwords import use_counting_hasher

pytestmark = pytest.mark.django_db


def basic(username: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


@pytest.fixture
def hasher(settings):
    return use_counting_hasher(settings)


@pytest.fixture
def ana(hasher):
    user = UserFactory(username="ana", password="ana-right-password")
    roles.update_user_roles(user, add=["osmo-admin"], actor=Actor(name="tester"))
    return user


def test_basic_credentials_are_refused_without_a_password_check(ana, hasher):
    hashes = hasher.hashes
    client = APIClient()
    for password in ["ana-right-password", *(f"guess-{n}" for n in range(20))]:
        response = client.get("/api/pool", HTTP_AUTHORIZATION=basic("ana", password))
        assert response.status_code == 401
        assert response["WWW-Authenticate"] == 'Bearer realm="api"'
        assert response.json()["code"] == "not_authenticated"
    assert hasher.hashes == hashes


def test_a_portal_token_still_works(ana):
    secret = tokens.create(ana, "ci").secret
    response = APIClient().get("/api/pool", HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert response.status_code == 200
