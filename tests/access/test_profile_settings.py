"""`GET/POST /api/profile/settings` (OSMO's `osmo profile list|set`): the default pool per user, over DRF's
client. Against a live server: tests/osmo_cli/test_pool_resource_profile.py."""

from __future__ import annotations

import pytest

from configs import store
from pools.models import UserProfile
from pools.services.profiles import default_pool
from tests.access.conftest import ACTOR, api, holder
from tests.factories import TokenFactory

pytestmark = pytest.mark.django_db
URL = "/api/profile/settings"


@pytest.fixture
def ana(seed_pools, team_role):
    return holder("osmo-team", username="ana")


def test_a_new_user_reads_defaults_and_writes_nothing(ana):
    response = api(ana).get(URL)
    assert response.status_code == 200
    data = response.json()
    assert data["profile"] == {
        "username": "ana",
        "email_notification": False,
        "slack_notification": False,
        "bucket": None,
        "pool": None,
    }
    # the pools the CLI prints as "accessible": osmo-team's prefix (and OSMO's `default` is not hers here)
    assert data["pools"] == ["team-cluster-02", "team-gpu-pool", "teamcluster01"]
    assert "osmo-team" in data["roles"]
    assert not UserProfile.objects.exists()
    assert default_pool(ana) is None


def test_setting_the_default_pool_as_osmo_profile_set_pool(ana):
    client = api(ana)
    response = client.post(URL, {"pool": "team-gpu-pool"}, format="json")
    assert response.status_code == 200  # the CLI treats anything but 200 as an error
    assert response.json()["profile"]["pool"] == "team-gpu-pool"
    assert client.get(URL).json()["profile"]["pool"] == "team-gpu-pool"
    assert default_pool(ana) == "team-gpu-pool"
    # notifications leave the pool alone; null means unchanged, as OSMO
    client.post(URL, {"email_notification": True, "pool": None}, format="json")
    assert client.get(URL).json()["profile"] == {
        "username": "ana",
        "email_notification": True,
        "slack_notification": False,
        "bucket": None,
        "pool": "team-gpu-pool",
    }
    assert client.post(URL, {"pool": ""}, format="json").json()["profile"]["pool"] is None


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"pool": "ghost"}, 404, "pool"),
        ({"pool": "robotics-training"}, 403, "pool"),  # exists, but ana may not submit there
        ({"pool": 3}, 400, "pool"),
        ({"bucket": "my_bucket"}, 400, "bucket"),
        ({"email_notification": "yes"}, 400, "email_notification"),
        ({"colour": "blue"}, 400, "colour"),
        ({"username": "bob"}, 400, "username"),
    ],
)
def test_bad_settings_are_refused_naming_the_field_and_change_nothing(ana, body, status, field):
    client = api(ana)
    client.post(URL, {"pool": "teamcluster01"}, format="json")
    response = client.post(URL, {**body, "slack_notification": True}, format="json")
    assert response.status_code == status, response.content
    assert response.json()["field"] == field
    assert client.get(URL).json()["profile"]["slack_notification"] is False
    assert default_pool(ana) == "teamcluster01"


def test_deleting_the_pool_clears_the_default(ana):
    api(ana).post(URL, {"pool": "team-gpu-pool"}, format="json")
    store.delete("POOL", "team-gpu-pool", ACTOR)
    assert default_pool(ana) is None
    assert api(ana).get(URL).json()["profile"]["pool"] is None


def test_a_token_reads_its_own_roles_pools_and_anonymous_is_refused(ana, team_role):
    narrow = TokenFactory(user=ana, roles=[])
    data = api(secret=narrow.secret).get(URL).json()
    assert data["profile"]["username"] == "ana" and data["pools"] == []
    assert api().get(URL).status_code == 401
    assert api().post(URL, {"pool": "team-gpu-pool"}, format="json").status_code == 401
