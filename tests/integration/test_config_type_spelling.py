"""`config_type` and `config_types` take the spelling the paths take (`pool`, `POOL`, `Pool`); a refused one
is echoed in `value` and the reason lists the valid ones, the same reason a path's refused type gets."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.factories import UserFactory

VALID = "pool, pod_template, resource_validation, backend, role, node_pool, machine_pool"


@pytest.mark.parametrize("spelling", ["pool", "POOL", "Pool"])
def test_every_spelling_is_the_same_type(admin_api, reference_config, spelling):
    admin_api.put("/api/configs/pool/spelled", {"configs": {"backend": "default"}}, format="json")
    history = admin_api.get(f"/api/configs/history?config_types={spelling}&name=spelled&omit_data=true")
    assert [row["config_type"] for row in history.json()["configs"]] == ["POOL"]
    diff = admin_api.get(f"/api/configs/diff?config_type={spelling}&name=spelled&first_revision=1&second_revision=1")
    assert diff.status_code == 200, diff.json()
    assert admin_api.get(f"/api/configs/{spelling}/spelled").status_code == 200


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        ("get", "/api/configs/history?config_types=pool&config_types=Pools", None, "config_types.1"),
        ("get", "/api/configs/diff?config_type=Pools&first_revision=1&second_revision=2", None, "config_type"),
        ("post", "/api/configs/history/rollback", {"config_type": "Pools", "revision": 1}, "config_type"),
        ("get", "/api/configs/Pools", None, "config_type"),
    ],
)
def test_a_refused_type_is_echoed_with_the_valid_ones(admin_api, db, method, url, body, field):
    response = getattr(admin_api, method)(url, body, format="json")
    assert response.status_code == 400
    error = response.json()
    assert (error["code"], error["field"], error["value"]) == ("invalid", field, "Pools")
    assert error["reason"] == f"is not a config type; expected one of {VALID} (in any case)"


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("get", "/api/configs/history?config_types=Pools", None),
        ("get", "/api/configs/diff?config_type=Pools&first_revision=1&second_revision=2", None),
        ("post", "/api/configs/history/rollback", {"config_type": "Pools", "revision": 1}),
    ],
)
def test_the_type_is_checked_before_any_permission_question(db, method, url, body):
    """Someone who may not read configs is still told which types exist (as for a path's type)."""
    client = APIClient()
    client.force_authenticate(UserFactory(username="nobody"))
    response = getattr(client, method)(url, body, format="json")
    assert response.status_code == 400, response.json()
    assert response.json()["value"] == "Pools" and VALID in response.json()["reason"]
