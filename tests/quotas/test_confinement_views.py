"""The node-pool constraint where pools shows a pod (issue #30, point 1; docs/placement.md, "Node pools"): the
offline `placement --pool` command and the admin's pod preview confine the pod as its tasks' pods are
(`pools.confinement`, the hook quotas installs) and name the node pool of each node kept off by it.

The cluster (tests.quotas.gpu_cluster): 2 V100 nodes in the Default (`sim-default`), 1 A100-40GB node in label
node pool `a100-40gb`; platform `any` selects no node, so it is charged to the Default."""

from __future__ import annotations

import html as html_lib
import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from clusters import inventory
from clusters.models import Backend
from pools.models import Pool
from tests.quotas import gpu_cluster as gc

CONSTRAINT = (
    "node a100-40-node-0 is in node pool a100-40gb, the task is confined to node pool sim-default: "
    "node(s) didn't match nodeSelector: pool-portal/node-pool=sim-default (node has no pool-portal/node-pool label)"
)


@pytest.fixture
def cluster(db, django_capture_on_commit_callbacks):
    with gc.cluster(v100=2, a100_40=1) as server:
        with django_capture_on_commit_callbacks(execute=True):  # the node-pool labels are patched after commit
            gc.configure(server, ["v100", "a100-40"], carve=["a100-40"], unpinned=("any",))
        inventory.sync_backend(Backend.objects.get(name="sim").pk)  # the labels, read back
        yield server


def placement(server, tmp_path, *extra: str) -> str:
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": server.emulator.list("nodes")}))
    pod = tmp_path / "pod.json"
    container = {"name": "main", "image": "busybox", "resources": {"limits": {"nvidia.com/gpu": "4"}}}
    spec = {"containers": [container], "tolerations": [gc.GPU_TOLERATION]}
    pod.write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}))
    out = StringIO()
    call_command("placement", "--pod", str(pod), "--nodes", str(nodes), *extra, stdout=out)
    return out.getvalue()


def test_placement_names_the_node_pool_constraint(cluster, tmp_path):
    bare = placement(cluster, tmp_path)
    assert "3 of 3 nodes fit." in bare and "node pool" not in bare  # a bare manifest: nothing confines it

    text = placement(cluster, tmp_path, "--pool", "gpu", "--platform", "any")
    lines = text.splitlines()
    assert lines[0] == (
        "Confined to node pool sim-default (nodeSelector pool-portal/node-pool=sim-default, "
        "added by the portal: node pool sim-default)"
    )
    assert lines[1].split() == ["NODE", "NODE", "POOL", "FITS", "REASONS"]
    rows = {line.split()[0]: line.split(None, 3)[1:] for line in lines[2:-1]}
    assert rows["v100-node-0"] == ["sim-default", "yes", "-"]
    assert rows["a100-40-node-0"] == ["a100-40gb", "no", CONSTRAINT]
    assert "2 of 3 nodes fit." in lines[-1]

    data = json.loads(placement(cluster, tmp_path, "--pool", "gpu", "--platform", "any", "--format", "json"))
    assert data["confinement"] == {
        "node_pool": "sim-default",
        "node_selector": {"pool-portal/node-pool": "sim-default"},
        "origin": "added by the portal: node pool sim-default",
    }
    verdicts = {row["name"]: (row["node_pool"], row["fits"], row["reasons"]) for row in data["nodes"]}
    assert verdicts["a100-40-node-0"] == ("a100-40gb", False, [CONSTRAINT])
    assert verdicts["v100-node-1"] == ("sim-default", True, [])


def test_placement_refuses_an_unknown_platform(cluster, tmp_path):
    with pytest.raises(Exception, match="is not a platform of pool gpu"):
        placement(cluster, tmp_path, "--pool", "gpu", "--platform", "nope")


def test_the_admin_pod_preview_shows_the_confinement_and_its_origin(cluster, admin_client):
    pool = Pool.objects.get(name="gpu")
    query = {"platform": "any", "task": "look", "gpu": "4"}
    response = admin_client.get(reverse("admin:pools_pool_preview", args=[pool.pk]), query)
    assert response.status_code == 200
    html = html_lib.unescape(response.content.decode())
    origins = dict(re.findall(r'<td class="code">([^<]*)</td><td class="note">([^<]*)</td>', html))
    selector_lines = {line.strip(): note for line, note in origins.items() if "pool-portal/node-pool" in line}
    assert selector_lines["pool-portal/node-pool: sim-default"] == "added by the portal: node pool sim-default"
    assert 'data-node-pool="sim-default"' in html and "Confined to node pool <strong>sim-default</strong>" in html
    assert "Would start now: 2 nodes can take it" in html
    assert f"<td>{CONSTRAINT}</td>" in html
