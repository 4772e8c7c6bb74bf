"""Node pools whose selectors collide (issue #30, point 5): a second node pool over nodes another one already
holds is refused at every door (the config store's `config update`, the REST configs API), with the name of
the node pool holding them; `node-pool list`, the REST list and the admin list show each node pool's node
count and flag an empty one."""

# ruff: noqa: F811  (tests take the imported fixtures `cli` and `document` by name)
from __future__ import annotations

import pytest

from quotas.models import NodePool
from tests.machinepools.test_doors_cli import document  # noqa: F401  (fixtures shared with those tests)
from tests.quotas.conftest import H100_LABEL, H100_PRODUCT
from tests.quotas.test_doors_cli import cli  # noqa: F401

LIST_URL = "/api/quotas/node_pools"
SAME_LABEL = {"backend": "sim", "selector": H100_LABEL}  # what node pool h100 selects
HELD_LABEL = {"backend": "sim", "selector": {"label": {"key": "hive.openshift.io/machine-pool", "value": "h100"}}}


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (SAME_LABEL, f"node pool h100 already selects these nodes (label nvidia.com/gpu.product={H100_PRODUCT})"),
        (HELD_LABEL, "matches 4 node(s) node pool h100 already holds (e.g. h100-node-0)"),
    ],
    ids=["same-label", "other-label-same-nodes"],
)
def test_a_colliding_selector_is_refused_at_the_cli_and_the_api_naming_the_holder(
    carved,
    cli,
    document,
    admin_api,
    body,
    reason,
):
    code, out, err = cli("config", "update", "NODE_POOL", "h100-again", "--file", document(body))
    assert code == 1 and out == ""
    assert err.startswith("error: selector: ") and reason in err
    answer = admin_api.put("/api/configs/node_pool/h100-again", {"configs": body}, format="json")
    assert answer.status_code == 400 and answer.json()["field"] == "selector", answer.json()
    assert reason in answer.json()["reason"]
    assert not NodePool.objects.filter(name="h100-again").exists()


def test_a_portal_label_cannot_select_a_node_pool(carved, admin_api):
    body = {"backend": "sim", "selector": {"label": {"key": "pool-portal/node-pool", "value": "sim-default"}}}
    answer = admin_api.put("/api/configs/node_pool/mine", {"configs": body}, format="json")
    assert answer.status_code == 400 and answer.json()["field"] == "selector.label.key"
    assert "the portal's own" in answer.json()["reason"]


def test_node_pool_lists_show_node_counts_and_flag_an_empty_one(carved, cli, document, admin_api, admin_client):
    nowhere = {"backend": "sim", "selector": {"label": {"key": "example.com/rack", "value": "r9"}}}
    code, _, err = cli("config", "update", "NODE_POOL", "rack-9", "--file", document(nowhere))
    assert code == 0, err
    code, table, _ = cli("node-pool", "list")
    lines = {line.split()[0]: line.split() for line in table.splitlines()[1:]}
    assert (lines["rack-9"][2], lines["rack-9"][3]) == ("0", "EMPTY")
    assert lines["h100"][2] == "4" and lines["h100"][3] != "EMPTY"
    rows = {row["name"]: row for row in admin_api.get(LIST_URL).json()["node_pools"]}
    assert {name: (row["nodes"], row["empty"]) for name, row in rows.items()} == {
        "a100": (2, False),
        "h100": (4, False),
        "rack-9": (0, True),
        "sim-default": (23, False),
    }
    page = admin_client.get("/admin/quotas/nodepool/").content.decode()
    assert "0 (empty)" in page
