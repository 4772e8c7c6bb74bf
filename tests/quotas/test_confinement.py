"""Confinement (issue #30, point 1; docs/quotas.md, "Confinement"): every pod the portal creates runs only on
nodes of the node pool it is charged to, whatever its platform's templates say, in managed and unmanaged
node pools alike.

The cluster: 4-GPU nodes, `a100-40-node-*` and `v100-node-*`. kubesim binds a pod to the first fitting
node by name, so a pod that nothing confines goes to an A100 node first: a platform without nodeSelector
(`any`) that escaped its node pool would be seen at once.

    default  node pool a100-40gb (label) on the 2 A100 nodes; the Default holds the 3 V100 nodes, so `any`
             (member of all 5) is charged to the Default
    label    node pool v100 (label) on the 3 V100 nodes, the Default the 2 A100 nodes: `any` is charged to v100
"""

from __future__ import annotations

import pytest

from clusters import inventory
from clusters.machinepools.node_labels import provisioned
from clusters.machinepools.spec import MachinePoolSpec
from clusters.models import Backend
from configs import store
from quotas.services import node_labels
from tests.polling import wait_until
from tests.quotas import gpu_cluster as gc
from tests.quotas.confinement import assert_no_pod_outside_its_node_pool, bound_pods
from workflows.management.commands.workflow import explanation
from workflows.models import Workflow
from workflows.services import SubmitRequest, submit

SHAPES = {  # carved label node pool, the node pool `any` is charged to, its selector
    "default": ("a100-40", "sim-default", {}),
    "label": ("v100", "v100", {"label": {"key": gc.GPU_PRODUCT_LABEL, "value": gc.PRODUCTS["v100"]}}),
}
V100_NODES, A100_NODES = 3, 2


def placed(server, pod_names: list[str]) -> dict[str, str]:
    """pod → its node, or "Unschedulable" once kubesim said it fits nowhere; {} until every pod is one."""
    answer = {}
    for name in pod_names:
        pod = server.emulator.get("pods", name, gc.NAMESPACE)
        conditions = (pod.get("status") or {}).get("conditions") or [] if pod else []
        if pod and pod["spec"].get("nodeName"):
            answer[name] = pod["spec"]["nodeName"]
        elif any(c.get("reason") == "Unschedulable" for c in conditions):
            answer[name] = "Unschedulable"
        else:
            return {}
    return answer


def set_deserved(node_pool: str, selector: dict, gpus: int) -> None:
    document = {
        "backend": "sim",
        "selector": selector,
        "departments": {"ops": {"gpu": {"deserved": gpus}}},
        "projects": {"infer": {"gpu": {"deserved": gpus}}},
    }
    store.apply("NODE_POOL", node_pool, document, gc.CLI)


@pytest.mark.parametrize("managed", [False, True], ids=["unmanaged", "managed"])
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_platform_without_selector_never_lands_outside_its_node_pool(
    db, django_capture_on_commit_callbacks, shape, managed
):
    carved, node_pool, selector = SHAPES[shape]
    with gc.cluster(v100=V100_NODES, a100_40=A100_NODES) as server:
        with django_capture_on_commit_callbacks(execute=True):  # the node-pool labels are patched after commit
            gc.configure(server, ["v100", "a100-40"], carve=[carved], unpinned=("any",))
        users = gc.teams({"ops": ["infer"]})
        if managed:  # deserved = the node pool's capacity: admission, not the cluster, decides who waits
            set_deserved(node_pool, selector, V100_NODES * gc.GPUS_PER_NODE)
        inventory.sync_backend(Backend.objects.get(name="sim").pk)
        workflows = [
            gc.submit_gpus(users["infer"], f"any-{i}", gc.GPUS_PER_NODE, "any", django_capture_on_commit_callbacks)
            for i in range(V100_NODES + A100_NODES)
        ]
        assert {w.node_pool for w in workflows} == {node_pool}
        created = [t.pod_name for w in Workflow.objects.filter(status="WAITING") for t in w.tasks.all()]
        nodes = wait_until(lambda: placed(server, created), timeout=30)
        assert assert_no_pod_outside_its_node_pool(server, gc.NAMESPACE) == V100_NODES
        assert sorted(n for n in nodes.values() if n != "Unschedulable") == [f"v100-node-{i}" for i in range(3)]
        waiting = Workflow.objects.exclude(status="WAITING").values_list("status", flat=True)
        # managed: the two beyond the guarantee wait QUEUED; unmanaged: their pods wait Unschedulable
        assert list(waiting) == (["QUEUED"] * A100_NODES if managed else [])
        assert list(nodes.values()).count("Unschedulable") == (0 if managed else A100_NODES)
        pod = server.emulator.get("pods", created[0], gc.NAMESPACE)
        wanted = (
            {gc.GPU_PRODUCT_LABEL: gc.PRODUCTS["v100"]}
            if shape == "label"
            else {"pool-portal/node-pool": "sim-default"}
        )
        assert pod["spec"]["nodeSelector"] == wanted


def test_a_node_not_labelled_yet_takes_no_confined_pod(db, django_capture_on_commit_callbacks):
    with gc.cluster(v100=2, a100_40=1) as server:  # `any` is charged to the Default (2 of its 3 nodes)
        gc.configure(server, ["v100", "a100-40"], carve=["a100-40"], unpinned=("any",))  # labels not patched
        users = gc.teams({"ops": ["infer"]})
        task = gc.submit_gpus(users["infer"], "early", 4, "any", django_capture_on_commit_callbacks).tasks.get()
        assert wait_until(lambda: placed(server, [task.pod_name]), timeout=30) == {task.pod_name: "Unschedulable"}
        assert node_labels.sync(Backend.objects.get(name="sim")) == ["v100-node-0", "v100-node-1"]  # not the A100
        inventory.sync_backend(Backend.objects.get(name="sim").pk)  # the inventory reads the labels back
        assert node_labels.stale_labels(Backend.objects.get(name="sim")) == {}
        assert wait_until(lambda: bound_pods(server, gc.NAMESPACE), timeout=30) == {task.pod_name: "v100-node-0"}
        assert assert_no_pod_outside_its_node_pool(server, gc.NAMESPACE) == 1


def test_the_preview_and_explain_show_the_node_pool_constraint(db, django_capture_on_commit_callbacks):
    with gc.cluster(v100=2, a100_40=1) as server:
        with django_capture_on_commit_callbacks(execute=True):
            gc.configure(server, ["v100", "a100-40"], carve=["a100-40"], unpinned=("any",))
        inventory.sync_backend(Backend.objects.get(name="sim").pk)  # the node-pool labels, read back
        user = gc.teams({"ops": ["infer"]})["infer"]
        preview = submit(SubmitRequest(pool="gpu", spec=gc.spec("look", 4, "any"), who=user, dry_run=True))
        [task] = preview.tasks
        assert task["pod"]["spec"]["nodeSelector"] == {"pool-portal/node-pool": "sim-default"}
        assert task["placement"]["fits"] == ["v100-node-0", "v100-node-1"]
        assert task["placement"]["rejected"]["a100-40-node-0"] == [
            "not in node pool sim-default (the node pool this platform is charged to): node(s) didn't match "
            "nodeSelector: pool-portal/node-pool=sim-default (node has no pool-portal/node-pool label)"
        ]
        workflow = gc.submit_gpus(user, "run", 4, "any", django_capture_on_commit_callbacks)
        explained = explanation(workflow)
        assert (explained["node_pool"], explained["node_selector"]) == (
            "sim-default",
            {"pool-portal/node-pool": "sim-default"},
        )


@pytest.mark.parametrize(
    ("labels", "wanted"),
    [
        ({}, {"pool-portal/node-pool": "sim-default"}),  # its nodes will be the Default's
        ({gc.GPU_PRODUCT_LABEL: gc.PRODUCTS["a100-40"]}, {}),  # a label node pool claims them by that label
    ],
    ids=["default", "label-node-pool"],
)
def test_a_machine_pool_s_nodes_come_up_with_their_node_pool_s_label(db, labels, wanted):
    """What the provider is asked for and what a would-be node carries (clusters.machinepools.node_labels):
    the confined pods' selector, so an autoscaler scales up for them from zero."""
    with gc.cluster(v100=1, a100_40=1) as server:
        gc.configure(server, ["v100", "a100-40"], carve=["a100-40"], unpinned=("any",))
        backend = Backend.objects.get(name="sim")
        spec = provisioned(MachinePoolSpec("spot", "g4dn.xlarge", labels=dict(labels)), backend.pk)
        assert spec.labels == {**labels, **wanted}
