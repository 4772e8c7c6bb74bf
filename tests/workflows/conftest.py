"""Fixtures for workflow tests: a simulated cluster (kubesim, demo fleet, fast kubelet) behind a backend,
a pool whose platforms steer the simulated kubelet through pod annotations, users, and a real Celery
worker on Redis for the end-to-end tests.

    pool batch (backend sim, namespace wf-jobs, created on first use)
      platform cpu       default: runs briefly and succeeds
      platform forever   kubesim/never-finish
      platform exit3     kubesim/exit-code 3
      platform parked    kubesim/start-seconds 3600 (bound to a node, never starts)
      platform nowhere   a nodeSelector no node has (unschedulable)
    users: alice (osmo-batch: workflow:* on pool/batch*), bob (osmo-user only), carol (osmo-batch)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from access.services import roles
from clusters.models import Backend
from configs import store
from configs.revisions import Actor
from kubesim import EmulatorServer
from pools.models import Pool
from tests.factories import RoleFactory, UserFactory
from tests.polling import PATIENCE, wait_until
from workflows import reconcile
from workflows.lifecycle.observe import container_of
from workflows.models import Task, TaskEvent, TaskStatus, Workflow
from workflows.services import SubmitRequest, submit

CLI = Actor(name="tester", source="cli")
NAMESPACE = "wf-jobs"
CPU_SELECTOR = {"hive.openshift.io/machine-pool": "cpu"}
TEMPLATES = {
    "cpu": {"spec": {"nodeSelector": CPU_SELECTOR}},
    "forever": {"metadata": {"annotations": {"kubesim/never-finish": "true"}}},
    "exit3": {"metadata": {"annotations": {"kubesim/exit-code": "3"}}},
    "parked": {"metadata": {"annotations": {"kubesim/start-seconds": "3600"}}},
    "nowhere": {"spec": {"nodeSelector": {"example.com/no-such-label": "x"}}},
}


def spec(
    name: str = "hello",
    *,
    tasks: int = 1,
    resource: str = "default",
    platform: str | None = None,
    exit_actions: dict | None = None,
    timeout: dict | None = None,
    command: tuple[str, ...] = ("sh", "-c", "echo hi"),
) -> dict:
    """A workflow document with `tasks` tasks on one resource entry (optionally an explicit platform)."""
    resources: dict[str, Any] = {"cpu": 0.1, "memory": "64Mi", "storage": "64Mi"}
    if platform:
        resources["platform"] = platform
    items = []
    for index in range(tasks):
        task: dict[str, Any] = {
            "name": f"t{index}",
            "image": "busybox:1.36",
            "command": list(command),
            "resource": resource,
        }
        if exit_actions:
            task["exitActions"] = exit_actions
        items.append(task)
    workflow: dict[str, Any] = {"name": name, "resources": {resource: resources}, "tasks": items}
    if timeout:
        workflow["timeout"] = timeout
    return {"version": 2, "workflow": workflow}


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def portal_instance(settings):
    settings.PORTAL_INSTANCE = "test-portal"
    settings.WORKFLOW_MAX_RETRIES_PER_TASK = 2
    return "test-portal"


@pytest.fixture
def kube_server() -> Iterator[EmulatorServer]:
    with EmulatorServer(
        host="127.0.0.1", port=0, fleet="demo", kubelet={"start_delay": 0.05, "run_seconds": 0.2}
    ) as server:
        yield server
        assert not server.emulator.internal_errors, list(server.emulator.internal_errors)


DEFAULT_NODE_POOL = {"pool-portal/node-pool": "sim-default"}


@pytest.fixture
def backend(db, kube_server) -> Backend:
    store.apply("BACKEND", "sim", {"description": "simulated", "namespace": NAMESPACE, "api_url": kube_server.url}, CLI)
    # The node-pool label the portal keeps on the nodes once its inventory has them (all in the Default here),
    # which every pod it creates selects (docs/quotas.md, "Confinement"); these tests keep no inventory.
    for node in kube_server.emulator.list("nodes"):
        kube_server.emulator.patch("nodes", node["metadata"]["name"], {"metadata": {"labels": DEFAULT_NODE_POOL}})
    return Backend.objects.get(name="sim")


@pytest.fixture
def pool(backend) -> Pool:
    from pools.engine import default_templates

    # OSMO's default_user template: requests/limits from typed variables, so quantities are JSON numbers
    # (cpu: 0.1 would be refused by the official client's typed models; the adapter posts raw JSON)
    store.apply_many("POD_TEMPLATE", {"default_user": default_templates()["default_user"], **TEMPLATES}, CLI)
    platforms = {"cpu": {"override_pod_template": ["cpu"]}}
    for extra in ("forever", "exit3", "parked"):
        platforms[extra] = {"override_pod_template": ["cpu", extra]}
    platforms["nowhere"] = {"override_pod_template": ["nowhere"]}
    store.apply(
        "POOL",
        "batch",
        {
            "backend": "sim",
            "default_platform": "cpu",
            "common_pod_template": ["default_user"],
            "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
            "platforms": platforms,
        },
        CLI,
    )
    return Pool.objects.get(name="batch")


@pytest.fixture
def batch_role(db):
    return RoleFactory(
        name="osmo-batch", policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/batch*"]}]
    )


def _user(name: str, *role_names: str):
    user = UserFactory(username=name)
    roles.update_user_roles(user, add=list(role_names), actor=CLI)
    return user


@pytest.fixture
def alice(batch_role):
    return _user("alice", "osmo-batch", "osmo-user")


@pytest.fixture
def carol(batch_role):
    return _user("carol", "osmo-batch", "osmo-user")


@pytest.fixture
def bob(db):
    return _user("bob", "osmo-user")


def api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


# ------------------------------------------------------------------------------------------ the lifecycle, called
# directly (Celery in eager mode for what it enqueues; the end-to-end runs through a real worker are in test_e2e.py)


@pytest.fixture
def submitted(pool, alice, django_capture_on_commit_callbacks):
    """Submit a workflow (pods not created yet: the enqueue after commit is captured, not run)."""

    def make(document=None, **kwargs) -> Workflow:
        with django_capture_on_commit_callbacks(execute=False):
            result = submit(SubmitRequest(pool="batch", spec=document or spec(**kwargs), who=alice))
        return Workflow.objects.get(workflow_id=result.workflow_id)

    return make


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run what lifecycle enqueues after commit (Celery is eager in tests without a broker)."""

    def call(fn, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return fn(*args, **kwargs)

    return call


def events(workflow) -> list[tuple[str, str]]:
    return list(
        TaskEvent.objects.filter(task__workflow=workflow).order_by("at", "id").values_list("task__name", "kind")
    )


def settle_until(backend, workflow, statuses, run_on_commit, timeout=PATIENCE) -> Workflow:
    """Reconcile (what the beat task does) until the workflow reaches one of `statuses`."""

    def done():
        run_on_commit(reconcile.reconcile_backend, backend.pk)
        workflow.refresh_from_db()
        return workflow.status in statuses

    wait_until(done, timeout=timeout, interval=0.05)
    return workflow


def pod_of(task: Task, phase: str, exit_code: int | None = None, node: str = "cpu-node-0") -> dict:
    """`task`'s pod as the cluster would report it: in `phase`, on `node`, exited with `exit_code` if given."""
    status: dict = {"phase": phase, "startTime": "2026-01-01T00:00:00Z"}
    if exit_code is not None:
        status["containerStatuses"] = [
            {
                "name": container_of(task),
                "state": {
                    "terminated": {
                        "exitCode": exit_code,
                        "startedAt": "2026-01-01T00:00:01Z",
                        "finishedAt": "2026-01-01T00:00:09Z",
                    }
                },
            }
        ]
    return {
        "metadata": {"name": task.pod_name, "namespace": task.namespace, "uid": f"uid-{task.pod_name}"},
        "spec": {"nodeName": node},
        "status": status,
    }


def waiting(task: Task) -> Task:
    """`task` as if its pod had been created (WAITING), read again with what `observe` needs."""
    Task.objects.filter(pk=task.pk).update(status=TaskStatus.WAITING, pod_created_at=timezone.now())
    return Task.objects.select_related("workflow__pool").get(pk=task.pk)


@pytest.fixture
def deleted_pods(monkeypatch) -> list:
    from workflows import tasks as jobs

    deleted: list = []
    monkeypatch.setattr(jobs.delete_pods, "delay", lambda backend_pk, targets, why: deleted.append((targets, why)))
    return deleted


# ------------------------------------------------------------------------------------------ Celery on Redis


@pytest.fixture
def watcher(backend):
    """The pod watcher of `watch_workflows`, applied in the test's thread with `tests.polling.drain_until`."""
    from workflows.watcher import WorkflowWatcher

    instance = WorkflowWatcher(["sim"], watch_seconds=30, backoff_max=0.5)
    instance.start()
    yield instance
    instance.stop()
