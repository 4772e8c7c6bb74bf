"""A simulated GPU cluster for admission tests: kubesim nodes labelled by GPU product (kubesim.fleet), a pool
`gpu` with one platform per product, node pools selected by the product label, and teams whose members
submit to pool `gpu` (each member belongs to one project, so submissions are charged to it).

    cluster(v100=…, a100_40=…, a100_80=…)   nodes of 4 GPUs each, products below
    pool gpu      platforms v100, a100-40, a100-80 (nodeSelector on nvidia.com/gpu.product; pods run forever)
    node pools    one label node pool per product present (`v100`, `a100-40gb`, `a100-80gb`)

Helpers: `submit_gpus(user, gpus, …)` submits one task asking for that many GPUs (split over tasks of one node's
GPUs when more) and runs what it queues
(admission, pod creation) as the embedded default does; `pod_of(server, task)` reads the pod back from kubesim.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from access.services import roles
from clusters import inventory
from configs import store
from configs.revisions import Actor
from kubesim import EmulatorServer
from kubesim.fleet import GPU_COUNT_LABEL, GPU_PRODUCT_LABEL, GPU_RESOURCE, node_manifest
from pools.engine import default_templates
from tests.factories import DepartmentFactory, ProjectFactory, RoleFactory, UserFactory
from workflows.models import Workflow
from workflows.services import SubmitRequest, submit

CLI = Actor(name="tester", source="cli")
NAMESPACE = "gpu-jobs"
PRODUCTS = {
    "v100": "Tesla-V100-SXM2-32GB",
    "a100-40": "NVIDIA-A100-SXM4-40GB",
    "a100-80": "NVIDIA-A100-SXM4-80GB",
}
NODE_POOLS = {"v100": "v100", "a100-40": "a100-40gb", "a100-80": "a100-80gb"}
GPUS_PER_NODE = 4
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}


def gpu_nodes(platform: str, count: int) -> list[dict]:
    """`count` nodes of 4 GPUs of the platform's product (a demo A100 node, relabelled)."""
    nodes = []
    for index in range(count):
        node = node_manifest("a100", index, name=f"{platform}-node-{index}")
        node["metadata"]["labels"].update({GPU_PRODUCT_LABEL: PRODUCTS[platform], GPU_COUNT_LABEL: "4"})
        node["status"]["capacity"][GPU_RESOURCE] = node["status"]["allocatable"][GPU_RESOURCE] = str(GPUS_PER_NODE)
        node["spec"].pop("unschedulable", None)
        node["spec"]["taints"] = [t for t in node["spec"].get("taints", []) if "unschedulable" not in t["key"]]
        nodes.append(node)
    return nodes


@contextmanager
def cluster(**counts: int) -> Iterator[EmulatorServer]:
    """kubesim with those nodes (keys: v100, a100_40, a100_80) and a kubelet that starts pods at once."""
    nodes = [node for key, count in counts.items() for node in gpu_nodes(key.replace("_", "-"), count)]
    with EmulatorServer(host="127.0.0.1", port=0, fleet=nodes, kubelet={"start_delay": 0.01}) as server:
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


def configure(
    server: EmulatorServer, platforms: list[str], *, carve: list[str] | None = None, unpinned: tuple[str, ...] = ()
) -> None:
    """Backend `sim`, pool `gpu` (one platform per product present, and the `unpinned` ones, whose templates
    select no node), inventory synced, and a label node pool per product of `carve` (default: every one of
    `platforms`; no quotas yet: unmanaged)."""
    store.apply("BACKEND", "sim", {"description": "simulated", "namespace": NAMESPACE, "api_url": server.url}, CLI)
    templates = {
        "default_user": default_templates()["default_user"],
        "gpu-toleration": {"spec": {"tolerations": [GPU_TOLERATION]}},
        "forever": {"metadata": {"annotations": {"kubesim/never-finish": "true"}}},
        **{p: {"spec": {"nodeSelector": {GPU_PRODUCT_LABEL: PRODUCTS[p]}}} for p in platforms},
    }
    store.apply_many("POD_TEMPLATE", templates, CLI)
    store.apply(
        "POOL",
        "gpu",
        {
            "backend": "sim",
            "default_platform": platforms[0],
            "common_pod_template": ["default_user", "gpu-toleration", "forever"],
            "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
            "platforms": {**{p: {"override_pod_template": [p]} for p in platforms}, **{p: {} for p in unpinned}},
        },
        CLI,
    )
    from clusters.models import Backend

    inventory.sync_backend(Backend.objects.get(name="sim").pk)
    for platform in platforms if carve is None else carve:
        selector = {"label": {"key": GPU_PRODUCT_LABEL, "value": PRODUCTS[platform]}}
        store.apply("NODE_POOL", NODE_POOLS[platform], {"backend": "sim", "selector": selector}, CLI)


def teams(structure: dict[str, list[str]]) -> dict:
    """Departments → projects, and one member per project (`<project>-user`) who may submit to pool gpu."""
    RoleFactory(name="osmo-gpu", policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/gpu*"]}])
    users = {}
    for department_name, projects in structure.items():
        department = DepartmentFactory(name=department_name)
        for name in projects:
            project = ProjectFactory(name=name, department=department)
            user = UserFactory(username=f"{name}-user")
            roles.update_user_roles(user, add=["osmo-gpu", project.role.name, "osmo-user"], actor=CLI)
            users[name] = user
    return users


def set_quotas(node_pool: str, platform: str, departments: dict, projects: dict, *, over_quota: bool = True) -> None:
    """The node pool's GPU quotas: `{team: deserved}` or `{team: {"deserved", "limit", "weight"}}`."""

    def gpu(value) -> dict:
        return {"gpu": value if isinstance(value, dict) else {"deserved": value}}

    document = {
        "backend": "sim",
        "selector": {"label": {"key": GPU_PRODUCT_LABEL, "value": PRODUCTS[platform]}},
        "over_quota": over_quota,
        "departments": {name: gpu(value) for name, value in departments.items()},
        "projects": {name: gpu(value) for name, value in projects.items()},
    }
    store.apply("NODE_POOL", node_pool, document, CLI)


def spec(name: str, gpus: int, platform: str, *, reschedule: bool = False, queue_timeout: str | None = None) -> dict:
    """One task `main` asking `gpus`; more than a node holds are split evenly over tasks `main`, `main-2`, … of at
    most GPUS_PER_NODE each (a task no node can hold is refused at submission)."""
    count = -(-gpus // GPUS_PER_NODE) or 1
    assert gpus % count == 0, f"{gpus} GPUs do not split evenly over {count} tasks"
    task = {"name": "main", "image": "busybox:1.36", "command": ["sh", "-c", "train"], "resource": "default"}
    if reschedule:
        task["exitActions"] = {"RESCHEDULE": "3006"}
    resources = {"cpu": 1, "memory": "1Gi", "storage": "1Gi", "gpu": gpus // count, "platform": platform}
    tasks = [{**task, "name": "main" if index == 0 else f"main-{index + 1}"} for index in range(count)]
    workflow = {"name": name, "resources": {"default": resources}, "tasks": tasks}
    if queue_timeout:
        workflow["timeout"] = {"queue_timeout": queue_timeout}
    return {"version": 2, "workflow": workflow}


def submit_gpus(user, name: str, gpus: int, platform: str, capture, **options) -> Workflow:
    """Submit and run what follows after commit (admission pass, pod creation), as in the embedded default."""
    with capture(execute=True):
        result = submit(SubmitRequest(pool="gpu", spec=spec(name, gpus, platform, **options), who=user))
    return Workflow.objects.get(workflow_id=result.workflow_id)


def pod_of(server: EmulatorServer, task) -> dict | None:
    return server.emulator.get("pods", task.pod_name, NAMESPACE)
