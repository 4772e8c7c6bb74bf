"""The OSMO seed documents' pools imported with the pod templates an OSMO install starts with, exactly as OSMO
ships them (tests/fixtures/osmo: `default_ctrl`'s `osmo-ctrl` has no image), and a workflow submitted through
each of their platforms to the simulated cluster: seeds 001 and 002 (heterogeneous_pool,
shared_simulation_training_pool, on OSMO's default_ctrl/default_user) and seed 000's pools (on the templates the
demo defines for the names they use, OSMO's shipped ones beside them).

The control container gets the backend's image (`control_image`, else OSMO_CTRL_IMAGE, else OSMO's default), as
OSMO's service fills it in; the preview's provenance says where it came from; a task still needs its own image.
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from configs import store
from pools.engine import default_validations
from pools.engine.defaults import OSMO_CTRL_IMAGE
from pools.services.preview import PreviewRequest, annotated_yaml, preview
from tests.factories import RoleFactory
from tests.polling import wait_until
from tests.workflows.conftest import CLI, NAMESPACE, _user
from workflows.lifecycle.create import create_pods
from workflows.models import Workflow
from workflows.services import SubmitRequest, submit
from workflows.spec_fields import SpecError

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SEEDS = FIXTURES / "seeds"
OSMO_TEMPLATES = json.loads((FIXTURES / "osmo" / "default_pod_templates.json").read_text())
# The a100 template of the seed documents, with the closing bracket their printed JSON misses
# (tests/fixtures/seeds/broken_a100_pod_template.json is the file as printed).
A100_TEMPLATE = {
    "spec": {
        "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100"},
        "tolerations": [
            {"key": "nvidia.com/gpu.product", "operator": "Equal", "value": "NVIDIA-A100", "effect": "NoSchedule"}
        ],
    }
}
SEED_POOLS = ("heterogeneous_pool", "shared_simulation_training_pool")
PLATFORMS = {"l40s_platform": "NVIDIA-L40S", "a100_platform": "NVIDIA-A100"}
# A task must ask at least what default_ctrl requests for osmo-ctrl (1 CPU, 1Gi, 1Gi), which it limits to the
# task's values: OSMO's templates as shipped.
RESOURCES = {"cpu": 1, "gpu": 1, "memory": "2Gi", "storage": "4Gi"}


@pytest.fixture
def osmo_install(db, kube_server):
    """Backend `default` (the seed pools' backend) on the simulated cluster, OSMO's shipped templates and rules,
    and the seed's l40s and a100 templates, imported as the seed documents do (`config update … --file`)."""
    store.apply("BACKEND", "default", {"namespace": NAMESPACE, "api_url": kube_server.url}, CLI)
    for node in kube_server.emulator.list("nodes"):
        labels = {"pool-portal/node-pool": "default-default"}  # backend default's Default node pool (no inventory)
        if node["metadata"]["labels"].get("nvidia.com/gpu.product", "").startswith("NVIDIA-A100"):
            labels["nvidia.com/gpu.product"] = "NVIDIA-A100"  # the seed documents' cluster labels them so
        # their templates tolerate no GPU taint: their clusters have none
        kube_server.emulator.patch("nodes", node["metadata"]["name"], {"metadata": {"labels": labels}})
        kube_server.emulator.patch("nodes", node["metadata"]["name"], {"spec": {"taints": []}})
    store.apply_many("POD_TEMPLATE", OSMO_TEMPLATES, CLI)
    validations = default_validations()
    store.apply_many("RESOURCE_VALIDATION", {k: validations[k] for k in ("default_cpu", "default_memory")}, CLI)
    store.apply("RESOURCE_VALIDATION", "default_storage", validations["default_storage"], CLI)
    run("config", "update", "POD_TEMPLATE", "l40s", "--file", str(SEEDS / "l40s_pod_template.json"))
    store.apply("POD_TEMPLATE", "a100", A100_TEMPLATE, CLI)
    for name in SEED_POOLS:
        assert f"POOL {name} created" in run("config", "update", "POOL", name, "--file", str(SEEDS / f"{name}.json"))
    RoleFactory(name="osmo-seeds", policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/*"]}])
    return _user("dana", "osmo-seeds", "osmo-user")


def run(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def workflow_on(platform: str, image: str = "busybox:1.36") -> dict:
    task = {"name": "hello", "image": image, "command": ["sh", "-c", "echo hi"]}
    resources = {"default": {**RESOURCES, "platform": platform}}
    return {"workflow": {"name": "seed", "resources": resources, "tasks": [task]}}


def submit_and_create(who, pool: str, platform: str) -> Workflow:
    result = submit(SubmitRequest(pool=pool, spec=workflow_on(platform), who=who))
    workflow = Workflow.objects.get(workflow_id=result.workflow_id)
    assert create_pods(workflow.pk).created == 1
    return workflow


@pytest.mark.parametrize("pool", SEED_POOLS)
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_each_platform_of_the_seed_pools_runs_a_workflow(osmo_install, kube_server, pool, platform):
    workflow = submit_and_create(osmo_install, pool, platform)
    task = workflow.tasks.get()
    containers = {c["name"]: c for c in task.pod["spec"]["containers"]}
    assert containers["osmo-ctrl"]["image"] == OSMO_CTRL_IMAGE  # neither the backend nor the settings name one
    assert containers["hello"]["image"] == "busybox:1.36"
    assert containers["osmo-ctrl"]["resources"]["requests"] == {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"}
    assert task.pod["spec"]["nodeSelector"]["nvidia.com/gpu.product"] == PLATFORMS[platform]

    def bound_node():
        return kube_server.emulator.get("pods", task.pod_name, NAMESPACE)["spec"].get("nodeName")

    node = wait_until(bound_node, what=f"the {platform} pod bound to a node")
    labels = kube_server.emulator.get("nodes", node)["metadata"]["labels"]
    assert labels["nvidia.com/gpu.product"] == PLATFORMS[platform]


def test_the_backends_control_image_then_the_setting(osmo_install, kube_server, settings):
    settings.OSMO_CTRL_IMAGE = "registry.example/osmo-ctrl:from-settings"
    workflow = submit_and_create(osmo_install, "heterogeneous_pool", "l40s_platform")
    pod = kube_server.emulator.get("pods", workflow.tasks.get().pod_name, NAMESPACE)
    assert [c["image"] for c in pod["spec"]["containers"]] == ["busybox:1.36", settings.OSMO_CTRL_IMAGE]
    store.apply(
        "BACKEND",
        "default",
        {"namespace": NAMESPACE, "api_url": kube_server.url, "control_image": "registry.example/ctrl:backend"},
        CLI,
    )
    workflow = submit_and_create(osmo_install, "heterogeneous_pool", "a100_platform")
    pod = kube_server.emulator.get("pods", workflow.tasks.get().pod_name, NAMESPACE)
    assert pod["spec"]["containers"][1]["image"] == "registry.example/ctrl:backend"


def test_the_preview_says_where_the_control_image_came_from(osmo_install, kube_server, settings):
    store.apply(
        "BACKEND",
        "default",
        {"namespace": NAMESPACE, "api_url": kube_server.url, "control_image": "registry.example/ctrl:7"},
        CLI,
    )
    result = preview(PreviewRequest(pool="heterogeneous_pool", platform="a100_platform", resources=RESOURCES))
    assert result["validation"]["ok"], result["validation"]
    assert result["provenance"]["spec.containers[1].image"] == {
        "source": "system",
        "setting": "backend default's control_image",
    }
    lines = dict(annotated_yaml(result["pod"], result["provenance"]))
    assert lines["      image: registry.example/ctrl:7"] == "system: backend default's control_image"
    store.apply("BACKEND", "default", {"namespace": NAMESPACE, "api_url": kube_server.url}, CLI)
    settings.OSMO_CTRL_IMAGE = "registry.example/ctrl:8"
    result = preview(PreviewRequest(pool="heterogeneous_pool", platform="a100_platform", resources=RESOURCES))
    assert result["provenance"]["spec.containers[1].image"]["setting"] == "the OSMO_CTRL_IMAGE setting"


def test_a_task_without_an_image_is_still_refused(osmo_install):
    with pytest.raises(SpecError) as caught:
        submit(SubmitRequest(pool="heterogeneous_pool", spec=workflow_on("l40s_platform", image=""), who=osmo_install))
    assert caught.value.field == "tasks[0].image"
    assert caught.value.reason.startswith("is required: an image reference")
    assert not Workflow.objects.exists()


def test_a_backend_control_image_with_spaces_is_refused_at_the_field(db):
    from configs.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        store.apply("BACKEND", "default", {"control_image": "nvcr.io/osmo ctrl:1"}, CLI)
    assert caught.value.field == "control_image"
    assert "must be an image reference" in caught.value.reason


# --------------------------------------------------------------------------- seed 000's pools (OSMO's pool docs)

SEED_000 = {  # file -> its pool's backend (a simulated cluster)
    "pool_robotics_training.json": "gpu-cluster-01",
    "pool_robotics_simulation.json": "graphics-cluster-01",
    "pool_robotics_inference.json": "inference-cluster-01",
    "pool_robotics_inference_jetson.json": "inference-cluster-01",
    "pool_team_development.json": "dev-cluster-01",
}


@pytest.fixture
def demo_clusters(db, monkeypatch):
    """One simulated cluster per backend of seed 000's pools (kubesim.fleet.DEMO_CLUSTERS), the demo's templates
    and rules (which those pools name) beside OSMO's shipped ones, and the nodes in their backends' Default pool."""
    from kubesim import EmulatorServer
    from kubesim.fleet import demo_cluster_fleet
    from pools.management.commands.seed_demo import demo_documents

    clusters = {name: EmulatorServer(fleet=demo_cluster_fleet(name)) for name in sorted(set(SEED_000.values()))}
    with EmulatorServer(host="127.0.0.1", port=0, clusters=clusters) as server:
        monkeypatch.setenv("DEMO_CLUSTERS_URL", server.url)
        for config_type, documents in demo_documents():
            if config_type == "BACKEND":
                documents = {name: body for name, body in documents.items() if name in clusters}
            if config_type in ("BACKEND", "POD_TEMPLATE", "RESOURCE_VALIDATION"):
                store.apply_many(config_type, documents, CLI)
        for name, cluster in clusters.items():
            for node in cluster.emulator.list("nodes"):
                labels = {"pool-portal/node-pool": f"{name}-default"}
                cluster.emulator.patch("nodes", node["metadata"]["name"], {"metadata": {"labels": labels}})
        RoleFactory(name="osmo-all", policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/*"]}])
        yield clusters, _user("erin", "osmo-all", "osmo-user")
        for cluster in clusters.values():
            assert not cluster.emulator.internal_errors, list(cluster.emulator.internal_errors)


@pytest.mark.parametrize("filename", sorted(SEED_000))
def test_each_platform_of_seed_000s_pools_takes_a_workflow(demo_clusters, filename):
    clusters, who = demo_clusters
    document = json.loads((SEEDS / filename).read_text())
    [(pool, body)] = document.items()
    assert "created" in run("config", "update", "POOL", "--file", str(SEEDS / filename))
    cluster = clusters[SEED_000[filename]]
    for platform in body["platforms"]:
        task = {"name": "hello", "image": "busybox:1.36", "command": ["sh", "-c", "echo hi"]}
        spec = {"workflow": {"name": "seed", "resources": {"default": {"platform": platform}}, "tasks": [task]}}
        result = submit(SubmitRequest(pool=pool, spec=spec, who=who))
        workflow = Workflow.objects.get(workflow_id=result.workflow_id)
        assert create_pods(workflow.pk).created == 1, (pool, platform)
        pod = cluster.emulator.get("pods", workflow.tasks.get().pod_name, "osmo-workflows")
        assert pod["metadata"]["labels"]["pool-portal/platform"] == platform
