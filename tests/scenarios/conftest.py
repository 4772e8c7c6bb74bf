"""Fixtures for the machine-pool scenarios (issue #14, "Proof"): the seed's usage examples from the MACHINE_POOL
definition to pods running on the simulated cluster, through the real doors and components only.

    cloud      kubesim over HTTP: the Kubernetes API, OCM's machine pools (cluster OCM_CLUSTER, ROSA's default
               `worker` pool with one node), machine pools turned into nodes, the simulated autoscaler and spot
               interruptions, all with short delays
    rosa       backend `rosa-sim`: ROSA through the emulator's OCM endpoints, pods on its Kubernetes API
    karpenter  backend `eks-sim`: Karpenter NodePools on the same emulator
    research   a pool on either backend (`research_pool(backend)`), OSMO's default_user template, spot
               interruptions rescheduled by its default_exit_actions {"RESCHEDULE": "3001"}
    researcher an API client holding a portal token of a user allowed workflow:* on pool/research*
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from rest_framework.test import APIClient

from access.models import Role
from access.services import roles
from clusters import inventory
from clusters.kube.connection import connect
from clusters.machinepools.reconcile import Outcome, reconcile_backend
from clusters.models import Backend, Node
from configs import store
from configs.revisions import Actor
from kubesim import EmulatorServer
from pools.engine import default_templates
from tests.factories import RoleFactory, TokenFactory, UserFactory
from tests.polling import wait_until
from workflows import reconcile
from workflows.models import Workflow

CLI = Actor(name="tester", source="cli")
OCM_CLUSTER, OCM_TOKEN = "2f8k3m9q1w7e5r4t", "ocm-offline-token"
NAMESPACE = "research-jobs"
MACHINEPOOL = "node.kubernetes.io/machinepool"
NODE_POOL = "pool-portal/node-pool"  # every pod is confined to its node pool: here the backend's Default


def in_default(backend: Backend, selector: dict) -> dict:
    """A pod's nodeSelector: the platform's own, and the confinement to the backend's Default node pool."""
    return {**selector, NODE_POOL: f"{backend.name}-default"}


SPOT_NOTICE_SECONDS = 0.3
FAST = {
    "boot_seconds": 0.2,
    "scale_up_seconds": 0.1,
    "scale_down_seconds": 30.0,  # nodes stay while a scenario looks at them
    "sync_seconds": 0.05,
    "spot_notice_seconds": SPOT_NOTICE_SECONDS,
}
# the kubelet's run time of one task, long enough to interrupt its node while it runs (pod annotation)
LONG_RUN = {"metadata": {"annotations": {"kubesim/run-seconds": "2.5"}}}


@pytest.fixture(autouse=True)
def portal_instance(settings):
    settings.PORTAL_INSTANCE = "test-portal"
    settings.WORKFLOW_MAX_RETRIES_PER_TASK = 2


@pytest.fixture
def cloud() -> Iterator[EmulatorServer]:
    kubelet = {"start_delay": 0.05, "run_seconds": 0.3}
    with EmulatorServer(host="127.0.0.1", port=0, kubelet=kubelet, machine_pools=FAST) as server:
        server.emulator.ocm_add_cluster(OCM_CLUSTER, token=OCM_TOKEN, worker_replicas=1)
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


@pytest.fixture
def rosa(db, cloud) -> Backend:
    body = {
        "description": "ROSA, simulated",
        "namespace": NAMESPACE,
        "api_url": cloud.url,
        "machine_provider": "rosa",
        "ocm_url": cloud.url,
        "ocm_cluster_id": OCM_CLUSTER,
        "ocm_token": OCM_TOKEN,
    }
    store.apply("BACKEND", "rosa-sim", body, CLI)
    return Backend.objects.get(name="rosa-sim")


@pytest.fixture
def karpenter(db, cloud) -> Backend:
    body = {
        "description": "EKS with Karpenter, simulated",
        "namespace": NAMESPACE,
        "api_url": cloud.url,
        "machine_provider": "karpenter",
        "karpenter_node_class": "default",
    }
    store.apply("BACKEND", "eks-sim", body, CLI)
    return Backend.objects.get(name="eks-sim")


def research_pool(backend: Backend, *, long_run: bool = False) -> None:
    """Pool `research` on `backend`; with `long_run`, every task runs LONG_RUN on the simulated kubelet."""
    store.apply_many("POD_TEMPLATE", {"default_user": default_templates()["default_user"], "long-run": LONG_RUN}, CLI)
    store.apply(
        "POOL",
        "research",
        {
            "backend": backend.name,
            "common_pod_template": ["default_user", "long-run"] if long_run else ["default_user"],
            "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
            "default_exit_actions": {"RESCHEDULE": "3001"},
        },
        CLI,
    )


@pytest.fixture
def researcher(db) -> APIClient:
    RoleFactory(
        name="osmo-research",
        policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/research*"]}],
    )
    user = UserFactory(username="rita")
    roles.update_user_roles(user, add=["osmo-research", "osmo-user"], actor=CLI)
    token = TokenFactory(user=user, roles=list(Role.objects.filter(name__in=["osmo-research", "osmo-user"])))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {token.secret}")
    return client


def converge(backend: Backend) -> Outcome:
    """One reconcile pass (what the Celery task runs) over the backend's machine pools."""
    return reconcile_backend(backend.pk)


def pool_nodes(backend: Backend, label: str, value: str, at_least: int = 1, timeout: float = 15.0) -> list[Node]:
    """The backend's ready nodes labelled `label=value` in the inventory, once there are `at_least`."""

    def synced() -> list[Node]:
        inventory.sync_backend(backend.pk)
        nodes = [n for n in Node.objects.filter(backend=backend, ready=True) if n.labels.get(label) == value]
        return nodes if len(nodes) >= at_least else []

    return wait_until(synced, timeout=timeout, interval=0.05, what=f"{at_least} ready node(s) {label}={value}")


def job(name: str, platform: str, *, gpu: int = 0) -> dict:
    """A one-task workflow on `platform` (the seed's Jobs: a batch container; a training one with `gpu` GPUs)."""
    resources: dict[str, Any] = {"cpu": 1, "memory": "1Gi", "storage": "1Gi", "platform": platform}
    if gpu:
        resources["gpu"] = gpu
    task = {"name": "t0", "image": "my-image:1", "command": ["sh", "-c", "echo work"], "resource": "default"}
    return {"version": 2, "workflow": {"name": name, "resources": {"default": resources}, "tasks": [task]}}


@pytest.fixture
def submit(researcher, django_capture_on_commit_callbacks):
    """Submit by the REST API as the researcher; what the submission enqueues (pod creation) runs."""

    def post(document: dict, pool: str = "research") -> Workflow:
        with django_capture_on_commit_callbacks(execute=True):
            answer = researcher.post(f"/api/pool/{pool}/workflow", document, format="json")
        assert answer.status_code == 200, answer.json()
        return Workflow.objects.get(workflow_id=answer.json()["workflow_id"])

    return post


@pytest.fixture
def settle(django_capture_on_commit_callbacks):
    """Reconcile the backend's workflows (what the beat task and the watcher do) until `until(workflow)`."""

    def run(backend: Backend, workflow: Workflow, until, timeout: float = 20.0, what: str = "") -> Workflow:
        def done():
            inventory.sync_backend(backend.pk)
            with django_capture_on_commit_callbacks(execute=True):
                reconcile.reconcile_backend(backend.pk)
            workflow.refresh_from_db()
            return until(workflow)

        wait_until(done, timeout=timeout, interval=0.05, what=what or f"workflow {workflow.workflow_id}")
        return workflow

    return run


def pods(backend: Backend) -> list[dict]:
    """The portal's pods in the backend's namespace, as the cluster lists them."""
    kube = connect(backend)
    listed = kube.json(
        "listing", kube.core.list_namespaced_pod, NAMESPACE, label_selector="pool-portal/instance=test-portal"
    )
    return listed["items"]


def pod(backend: Backend, name: str) -> dict:
    kube = connect(backend)
    return kube.json("reading", kube.core.read_namespaced_pod, name, NAMESPACE)
