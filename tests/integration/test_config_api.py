"""Config REST API on OSMO's paths: happy paths, error envelope, permissions, query counts."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from clusters.models import Backend
from configs import store
from pools.models import NodeMembership, Platform
from tests.factories import NodeFactory, UserFactory
from tests.integration.conftest import CLI
from tests.queries import assert_constant_queries

ERROR_KEYS = {"code", "field", "value", "reason", "error_code", "message"}


def test_put_get_delete_one_object(admin_api, reference_config):
    body = {"configs": {"backend": "default", "description": "api pool"}, "description": "via api", "tags": ["x"]}
    created = admin_api.put("/api/configs/pool/api-pool", body, format="json")
    assert created.status_code == 200, created.json()  # OSMO answers 200; `created` tells
    assert created.json()["created"] is True and created.json()["revision"] == 1
    assert admin_api.get("/api/configs/pool/api-pool").json()["description"] == "api pool"
    updated = admin_api.put("/api/configs/pool/api-pool", {"configs": {"backend": "default"}}, format="json")
    assert updated.status_code == 200 and updated.json()["revision"] == 2
    deleted = admin_api.delete("/api/configs/pool/api-pool", {"description": "bye"}, format="json")
    assert deleted.json() == {"config_type": "POOL", "name": "api-pool", "revision": 3, "deleted": True}
    assert admin_api.get("/api/configs/pool/api-pool").status_code == 404


def test_collection_put_is_all_or_nothing(admin_api, reference_config):
    response = admin_api.put(
        "/api/configs/pod_template", {"configs": {"ok": {"spec": {}}, "bad": {"spek": {}}}}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["field"] == "bad.spek"
    assert "ok" not in admin_api.get("/api/configs/pod_template").json()


def test_backend_post_as_osmo_does(admin_api, db):
    response = admin_api.post("/api/configs/backend/c9", {"configs": {"description": "x"}}, format="json")
    assert response.status_code == 200 and response.json()["created"] is True
    assert admin_api.get("/api/configs/backend/c9").json()["namespace"] == "default"
    # on an existing backend POST replaces the fields it names and keeps the others (OSMO's update_backend)
    admin_api.post("/api/configs/backend/c9", {"configs": {"namespace": "team"}}, format="json")
    backend = admin_api.get("/api/configs/backend/c9").json()
    assert (backend["namespace"], backend["description"]) == ("team", "x")


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "field"),
    [
        ("put", "/api/configs/pool/p", {"configs": {"backend": "nowhere"}}, 400, "backend"),
        (
            "put",
            "/api/configs/pool/p",
            {"configs": {"backend": "default", "default_platform": "x"}},
            400,
            "default_platform",
        ),
        (
            "put",
            "/api/configs/pool/p",
            {"configs": {"backend": "default", "max_queue_timeout": "soon"}},
            400,
            "max_queue_timeout",
        ),
        ("put", "/api/configs/pool/p", {"description": "no configs key"}, 400, "configs"),
        ("put", "/api/configs/pool/bad%20name", {"configs": {"backend": "default"}}, 400, "name"),
        ("put", "/api/configs/widget/x", {"configs": {}}, 400, "config_type"),
        ("get", "/api/configs/pool/ghost", None, 404, "name"),
        ("delete", "/api/configs/backend/default", None, 409, "name"),
        ("delete", "/api/configs/pod_template/a100", None, 409, "name"),
        (
            "get",
            "/api/configs/diff?config_type=POOL&name=hetero&first_revision=1&second_revision=9",
            None,
            404,
            "revision",
        ),
        ("get", "/api/configs/diff?config_type=POOL", None, 400, "first_revision"),
        (
            "post",
            "/api/configs/history/rollback",
            {"config_type": "POOL", "name": "hetero", "revision": 0},
            400,
            "revision",
        ),
    ],
)
def test_errors_are_json_with_field_value_reason(admin_api, demo_pools, method, path, body, status, field):
    store.apply("POOL", "hetero", {"backend": "default", "common_pod_template": ["a100"]}, CLI)
    response = getattr(admin_api, method)(path, body, format="json")
    assert response.status_code == status, response.content
    payload = response.json()
    assert set(payload) >= ERROR_KEYS
    assert payload["field"] == field
    assert payload["reason"]


def test_malformed_json_body_is_a_400_not_a_500(admin_api, db):
    response = admin_api.generic("PUT", "/api/configs/pool/p", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["code"] == "parse_error"


def test_history_diff_rollback_endpoints(admin_api, reference_config):
    store.apply("POOL", "h", {"backend": "default", "description": "one"}, CLI)
    store.apply("POOL", "h", {"backend": "default", "description": "two"}, CLI)
    history = admin_api.get("/api/configs/history?config_types=POOL&name=h&omit_data=true").json()["configs"]
    # OSMO's order: oldest first; `revision` numbers the POOL type's changes, `objects` the pool's own
    assert [h["objects"] for h in history] == [
        [{"name": "h", "revision": 1, "deleted": False}],
        [{"name": "h", "revision": 2, "deleted": False}],
    ]
    assert history[1]["revision"] == history[0]["revision"] + 1 and history[0]["data"] is None
    with_data = admin_api.get("/api/configs/history?name=h&order=desc&limit=1").json()["configs"]
    assert with_data[0]["data"]["pools"]["h"]["description"] == "two"
    diff = admin_api.get("/api/configs/diff?config_type=POOL&name=h&first_revision=1&second_revision=2").json()
    assert diff["changes"] == [{"path": "description", "op": "changed", "old": "one", "new": "two"}]
    rolled = admin_api.post(
        "/api/configs/history/rollback", {"config_type": "POOL", "name": "h", "revision": 1}, format="json"
    )
    assert rolled.status_code == 200 and rolled.json()["revision"] == 3
    assert admin_api.get("/api/configs/pool/h").json()["description"] == "one"


def test_pool_list_and_query_count_is_constant(admin_api, demo_pools):
    assert set(admin_api.get("/api/pool").json()["pools"]) >= {"robotics-training", "heterogeneous_pool"}

    def add_pools():
        for index in range(15):
            store.apply("POOL", f"extra-{index}", {"backend": "default", "platforms": {"a": {}, "b": {}}}, CLI)

    assert_constant_queries(lambda: admin_api.get("/api/pool"), grow=add_pools)


def test_config_collection_query_count_is_constant(admin_api, demo_pools):
    def add_pools():
        for index in range(10):
            store.apply(
                "POOL",
                f"more-{index}",
                {
                    "backend": "default",
                    "common_pod_template": ["default_user"],
                    "common_default_variables": {
                        "USER_CPU": 1,
                        "USER_GPU": 0,
                        "USER_MEMORY": "1Gi",
                        "USER_STORAGE": "1Gi",
                    },
                    "platforms": {"a": {"override_pod_template": ["a100"]}},
                },
                CLI,
            )

    assert_constant_queries(lambda: admin_api.get("/api/configs/pool"), grow=add_pools)


def test_config_api_is_admin_only_for_now(db):
    anonymous = APIClient()
    assert anonymous.get("/api/configs/pool").status_code in (401, 403)
    member = APIClient()
    member.force_authenticate(UserFactory())
    response = member.put("/api/configs/backend/x", {"configs": {}}, format="json")
    assert response.status_code == 403
    assert set(response.json()) >= ERROR_KEYS


def test_openapi_schema_lists_the_config_paths(admin_client):
    response = admin_client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in (
        "/api/configs/{config_type}/{name}",
        "/api/configs/history",
        "/api/configs/diff",
        "/api/configs/history/rollback",
        "/api/pool",
    ):
        assert path in paths


def test_openapi_schema_shows_each_config_body_as_its_description_says(admin_client):
    schemas = admin_client.get("/api/schema/", HTTP_ACCEPT="application/json").json()["components"]["schemas"]
    pool = schemas["PoolBody"]["properties"]
    assert pool["enable_maintenance"] == {"type": "boolean", "default": False}
    assert pool["platforms"]["additionalProperties"]["$ref"] == "#/components/schemas/PoolBodyPlatforms"
    assert schemas["PoolBodyResourcesGpu"]["properties"]["maximum"]["description"] == "-1 = unlimited"
    assert schemas["BackendBody"]["properties"]["namespace"]["default"] == "default"
    assert "force" not in schemas["RoleBody"]["properties"] or schemas["RoleBody"]["properties"]["force"].get(
        "writeOnly"
    )


def test_swagger_ui_is_served_without_any_cdn(admin_client):
    page = admin_client.get("/api/schema/ui/").content.decode()
    assert "swagger-ui" in page
    assert "cdn" not in page.lower() and "https://" not in page


def test_collection_put_accepts_osmo_list_form(admin_api, db):
    roles = [
        {
            "name": "osmo-vision",
            "description": "vision team",
            "policies": [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/vision*"]}],
        },
        {
            "name": "osmo-speech",
            "description": "speech team",
            "policies": [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/speech*"]}],
        },
    ]
    response = admin_api.put("/api/configs/role", {"configs": roles}, format="json")
    assert response.status_code == 200, response.json()
    assert {"osmo-vision", "osmo-speech"} <= {role["name"] for role in admin_api.get("/api/configs/role").json()}
    twice = admin_api.put("/api/configs/role", {"configs": [roles[0], roles[0]]}, format="json")
    assert twice.status_code == 400 and twice.json()["value"] == "osmo-vision"


def test_pool_list_shows_free_capacity_per_pool_and_platform(admin_api, demo_pools):
    platform = Platform.objects.get(pool__name="team-development", name="small-gpu")
    node = NodeFactory(
        backend=Backend.objects.get(name="dev-cluster-01"),
        name="t4-0",
        gpu_allocatable=4,
        gpu_used=1,
        cpu_allocatable=8000,
        memory_allocatable=2**34,
    )
    NodeMembership.objects.create(node=node, platform=platform, pool=platform.pool)
    row = admin_api.get("/api/pool?all_pools=true").json()["pools"]["team-development"]
    assert row["capacity"]["nodes"] == 1
    assert row["capacity"]["free"]["nvidia.com/gpu"] == 3
    assert row["platforms"]["small-gpu"]["capacity"]["allocatable"]["nvidia.com/gpu"] == 4
    assert row["platforms"]["cpu-only"]["capacity"]["nodes"] == 0
