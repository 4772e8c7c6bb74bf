"""Authorization matrix: every API endpoint and every admin changelist × every kind of principal.

Principals: anonymous; a signed-in user with no role; a team member (osmo-user + osmo-team); a member
of another team (osmo-user + osmo-other); a pool administrator (config:* on config/pool only); an
administrator (osmo-admin); an API token of an administrator carrying only osmo-user + osmo-team.
"""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from access.models import AuditEvent
from access.services import roles
from configs import store
from portal.apps import load_admin
from tests.access.conftest import ACTOR, allow, api, holder, role
from tests.factories import TokenFactory

pytestmark = [pytest.mark.heavy, pytest.mark.django_db]

PRINCIPALS = ["anonymous", "no_role", "team", "other_team", "pool_admin", "admin", "token_subset"]
ENVELOPE = {"code", "field", "value", "reason", "error_code", "message"}


@pytest.fixture
def world(db):
    store.apply("BACKEND", "cluster-a", {}, ACTOR)
    store.apply("POD_TEMPLATE", "unused", {"spec": {}}, ACTOR)
    for name in ("teamcluster01", "other-pool", "default"):
        store.apply("POOL", name, {"backend": "cluster-a"}, ACTOR)
    roles.set_pool_role("osmo-team", ACTOR)
    roles.set_pool_role("osmo-other", ACTOR)
    role("pool-admins", allow(["config:*"], ["config/pool"]))
    admin_user = holder("osmo-admin", "osmo-user", "osmo-team", username="matrix-admin")
    token = TokenFactory(user=admin_user, roles=roles.resolve(["osmo-user", "osmo-team"]))
    return {
        "anonymous": None,
        "no_role": holder(username="matrix-nobody"),
        "team": holder("osmo-user", "osmo-team", username="matrix-team"),
        "other_team": holder("osmo-user", "osmo-other", username="matrix-other"),
        "pool_admin": holder("pool-admins", username="matrix-pool-admin"),
        "admin": admin_user,
        "token_subset": token,
    }


def _client(world, principal):
    who = world[principal]
    if principal == "token_subset":
        return api(secret=who.secret)
    return api(who)


# (method, path, body, expected status per principal in PRINCIPALS order)
API_MATRIX = [
    ("get", "/api/configs/pool", None, [401, 403, 403, 403, 200, 200, 403]),
    (
        "put",
        "/api/configs/pool",
        {"configs": {"new-pool": {"backend": "cluster-a"}}},
        [401, 403, 403, 403, 200, 200, 403],
    ),
    ("get", "/api/configs/pool/teamcluster01", None, [401, 403, 403, 403, 200, 200, 403]),
    (
        "put",
        "/api/configs/pool/teamcluster01",
        {"configs": {"backend": "cluster-a", "description": "x"}},
        [401, 403, 403, 403, 200, 200, 403],
    ),
    ("delete", "/api/configs/pool/other-pool", None, [401, 403, 403, 403, 200, 200, 403]),
    ("get", "/api/configs/pod_template", None, [401, 403, 403, 403, 403, 200, 403]),
    ("put", "/api/configs/pod_template/t1", {"configs": {"spec": {}}}, [401, 403, 403, 403, 403, 200, 403]),
    ("delete", "/api/configs/pod_template/unused", None, [401, 403, 403, 403, 403, 200, 403]),
    ("get", "/api/configs/resource_validation", None, [401, 403, 403, 403, 403, 200, 403]),
    ("get", "/api/configs/backend/cluster-a", None, [401, 403, 403, 403, 403, 200, 403]),
    ("post", "/api/configs/backend/cluster-b", {"configs": {}}, [401, 403, 403, 403, 403, 200, 403]),
    ("get", "/api/configs/role", None, [401, 403, 403, 403, 403, 200, 403]),
    ("put", "/api/configs/role/osmo-new", {"configs": {"policies": []}}, [401, 403, 403, 403, 403, 200, 403]),
    ("get", "/api/configs/history", None, [401, 403, 403, 403, 403, 200, 403]),
    ("get", "/api/configs/history?config_types=POOL", None, [401, 403, 403, 403, 200, 200, 403]),
    # every type asked for is checked, not only the last
    ("get", "/api/configs/history?config_types=ROLE&config_types=POOL", None, [401, 403, 403, 403, 403, 200, 403]),
    (
        "patch",
        "/api/configs/pool/teamcluster01",
        {"configs_dict": {"description": "y"}},
        [401, 403, 403, 403, 200, 200, 403],
    ),
    (
        "get",
        "/api/configs/diff?config_type=POOL&first_revision=1&second_revision=1",
        None,
        [401, 403, 403, 403, 200, 200, 403],
    ),
    ("post", "/api/configs/history/pool/revision/1/tags", {"set_tags": ["x"]}, [401, 403, 403, 403, 200, 200, 403]),
    ("post", "/api/configs/history/role/revision/1/tags", {"set_tags": ["x"]}, [401, 403, 403, 403, 403, 200, 403]),
    (
        "get",
        "/api/configs/diff?config_type=POOL&name=teamcluster01&first_revision=1&second_revision=1",
        None,
        [401, 403, 403, 403, 200, 200, 403],
    ),
    (
        "post",
        "/api/configs/history/rollback",
        {"config_type": "POOL", "name": "teamcluster01", "revision": 1},
        [401, 403, 403, 403, 200, 200, 403],
    ),
    (
        "post",
        "/api/configs/history/rollback",
        {"config_type": "ROLE", "name": "osmo-team", "revision": 1},
        [401, 403, 403, 403, 403, 200, 403],
    ),
    ("get", "/api/pool", None, [401, 403, 200, 200, 403, 200, 200]),
    ("get", "/api/pool?all_pools=true", None, [401, 403, 200, 200, 403, 200, 200]),
    ("get", "/api/auth/access_token", None, [401, 403, 200, 200, 403, 200, 200]),
    ("post", "/api/auth/access_token/new-token", None, [401, 403, 200, 200, 403, 200, 200]),
    ("get", "/api/auth/access_token/ghost", None, [401, 403, 404, 404, 403, 404, 404]),
    ("delete", "/api/auth/access_token/ghost", None, [401, 403, 404, 404, 403, 404, 404]),
    ("get", "/api/auth/user", None, [401, 403, 403, 403, 403, 200, 403]),
    ("get", "/api/auth/users/matrix-team", None, [401, 403, 403, 403, 403, 200, 403]),
    ("post", "/api/auth/user", {"id": "matrix-new"}, [401, 403, 403, 403, 403, 200, 403]),
    ("post", "/api/auth/user/matrix-team/roles", {"role_name": "osmo-other"}, [401, 403, 403, 403, 403, 200, 403]),
    ("get", "/api/auth/user/matrix-team/access_token", None, [401, 403, 403, 403, 403, 200, 403]),
    ("get", "/api/auth/login", None, [200, 200, 200, 200, 200, 200, 200]),
]


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize(
    ("method", "path", "body", "expected"), API_MATRIX, ids=[f"{m.upper()} {p}" for m, p, _, _ in API_MATRIX]
)
def test_api_matrix(world, principal, method, path, body, expected):
    want = expected[PRINCIPALS.index(principal)]
    response = getattr(_client(world, principal), method)(path, body, format="json")
    assert response.status_code == want, response.content
    if want in (401, 403):
        assert set(response.json()) == ENVELOPE
        assert response.json()["code"] == ("forbidden" if want == 403 else "not_authenticated")
        assert AuditEvent.objects.filter(
            action="access.denied", outcome="denied", source="api", remote_addr="10.1.2.3"
        ).exists()


@pytest.mark.parametrize(
    ("principal", "expected"),
    [
        ("team", {"teamcluster01", "default"}),
        ("other_team", {"other-pool", "default"}),
        ("admin", {"teamcluster01", "other-pool", "default"}),
        ("token_subset", {"teamcluster01", "default"}),
    ],
)
def test_pool_list_shows_each_principal_its_pools(world, principal, expected):
    # every pool, as OSMO (all_pools defaults to true), each marked `accessible`; all_pools=false: only those
    client = _client(world, principal)
    every = client.get("/api/pool").json()["pools"]
    assert set(every) == {"teamcluster01", "other-pool", "default"}
    assert {name for name, row in every.items() if row["accessible"]} == expected
    assert set(client.get("/api/pool?all_pools=false").json()["pools"]) == expected


def test_a_403_says_who_may_not_do_what_and_why(world):
    body = _client(world, "team").get("/api/configs/pool").json()
    assert body["field"] == "resource" and body["value"] == "config/pool"
    assert body["reason"].startswith("matrix-team may not config:Read on config/pool: no policy of roles ")


# --- admin pages --------------------------------------------------------------------------------------

POOL_ADMIN_MODELS = {"pools.pool", "pools.platform", "configs.revision", "pools.poolcapacity"}


def _admin_models():
    load_admin()  # at collection, before any URL is resolved (the URLconf loads the admin otherwise)
    return sorted(f"{model._meta.app_label}.{model._meta.model_name}" for model in admin.site._registry)


def _admin_client(world, principal) -> Client:
    client = Client()
    who = world[principal]
    if principal == "token_subset":
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {who.secret}"  # the admin ignores bearer tokens
    elif who is not None:
        client.force_login(who)
    return client


def _expected(principal: str, label: str) -> str:
    if principal in ("anonymous", "token_subset"):
        return "login"
    if principal in ("no_role", "team", "other_team"):
        return "home"
    if principal == "pool_admin":
        return "ok" if label in POOL_ADMIN_MODELS else "forbidden"
    return "ok"


@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("label", _admin_models())
def test_admin_changelist_matrix(world, principal, label):
    app_label, model_name = label.split(".")
    response = _admin_client(world, principal).get(reverse(f"admin:{app_label}_{model_name}_changelist"))
    outcome = _expected(principal, label)
    if outcome == "ok":
        assert response.status_code == 200
    elif outcome == "forbidden":
        assert response.status_code == 403
        assert AuditEvent.objects.filter(action="access.denied", source="admin").exists()
    else:
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
        if outcome == "home":
            assert _admin_client(world, principal).get(response["Location"])["Location"] == "/"


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_admin_change_page_matrix(world, principal):
    from pools.models import Pool

    url = reverse("admin:pools_pool_change", args=[Pool.objects.get(name="teamcluster01").pk])
    response = _admin_client(world, principal).get(url)
    outcome = _expected(principal, "pools.pool")
    assert response.status_code == {"ok": 200, "forbidden": 403, "login": 302, "home": 302}[outcome]


@pytest.mark.parametrize("principal", PRINCIPALS)
def test_admin_index_and_explain_page(world, principal):
    client = _admin_client(world, principal)
    index = client.get(reverse("admin:index"))
    explain = client.get(reverse("admin:access_explain"), {"user": "matrix-team", "pool": "teamcluster01"})
    if principal == "admin":
        assert index.status_code == 200 and explain.status_code == 200
    elif principal == "pool_admin":
        assert index.status_code == 200 and explain.status_code == 403
    else:
        assert index.status_code == 302 and explain.status_code == 302
