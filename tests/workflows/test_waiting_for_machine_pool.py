"""A task whose pod is unschedulable while an autoscaled machine pool of its platform would take it and is adding
or can add a node: the workflow page, the API's task `status_message` and the CLI name the machine pool (from
zero, while its new node starts, and past its first node); without such a machine pool, or with every one at
its maximum, they keep "Not schedulable yet" and the reason.
The page and the detail answer read as many queries for many waiting tasks as for one."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from clusters.models import Backend
from configs import store
from configs.revisions import Actor
from pools.engine import default_templates
from pools.engine.defaults import OSMO_DEFAULT_POOL, OSMO_DEFAULT_VARIABLES
from pools.models import Pool
from pools.services.machine_pool_platforms import make_platform
from pools.services.preview import PreviewRequest, preview
from tests.factories import MachinePoolFactory, NodeFactory, TaskFactory, UserFactory, WorkflowFactory
from tests.queries import queries_of
from tests.workflows.conftest import api
from workflows.models import TaskEvent, TaskStatus

pytestmark = pytest.mark.django_db

CLI = Actor(name="tester", source="cli")
REASON = "Unschedulable: 0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
WAITS = "Waiting for machine pool gpu-t4-spot to add a node (0 → 1 of max 4)"


def pool_body(backend: str) -> dict:
    return {
        "backend": backend,
        "common_pod_template": list(OSMO_DEFAULT_POOL["common_pod_template"]),
        "common_default_variables": dict(OSMO_DEFAULT_VARIABLES),
    }


@pytest.fixture
def gpu(db) -> Pool:
    """Pool `gpu` on ROSA backend `rosa-a`: platform `gpu-t4-spot` made from the machine pool of that name
    (g4dn.xlarge, 1 × T4, spot, autoscaling 0-4, no node yet), and platform `cpu` no machine pool serves."""
    store.apply("BACKEND", "rosa-a", {"description": "ROSA"}, CLI)
    store.apply_many("POD_TEMPLATE", default_templates(), CLI)  # OSMO's: the resources a task asks for
    store.apply("POD_TEMPLATE", "cpu-nodes", {"spec": {"nodeSelector": {"node-type": "cpu"}}}, CLI)
    body = pool_body("rosa-a")
    body["platforms"] = {"cpu": {"override_pod_template": ["cpu-nodes"]}}
    store.apply("POOL", "gpu", body, CLI)
    MachinePoolFactory(backend=Backend.objects.get(name="rosa-a"), name="gpu-t4-spot", max_replicas=4)
    make_platform("gpu-t4-spot", CLI)
    return Pool.objects.get(name="gpu")


@pytest.fixture
def alice(db):
    return UserFactory(username="alice")


def waiting_task(workflow, platform: str, *, gpus: int = 1, name: str | None = None):
    """A task of `workflow` whose pod (resolved as a submission resolves it) the scheduler cannot place."""
    pool = workflow.pool.name
    pod = preview(PreviewRequest(pool=pool, platform=platform, resources={"gpu": gpus}))["pod"]
    fields = {"name": name} if name else {}
    task = TaskFactory(workflow=workflow, platform=platform, pod=pod, status=TaskStatus.WAITING, error=REASON, **fields)
    TaskEvent.objects.create(task=task, kind="UNSCHEDULABLE", message=REASON)
    return task


def page(user, workflow) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/workflows/{workflow.workflow_id}/")
    assert response.status_code == 200
    return response.content.decode()


def statuses(user, workflow) -> dict[str, str]:
    response = api(user).get(f"/api/workflow/{workflow.workflow_id}")
    assert response.status_code == 200, response.json()
    return {task["name"]: task["status_message"] for task in response.json()["tasks"]}


def test_a_task_waiting_for_a_scale_from_zero_machine_pool_is_told_so(gpu, alice):
    workflow = WorkflowFactory(pool=gpu, submitted_by=alice, status="WAITING")
    waiting_task(workflow, "gpu-t4-spot", name="train")
    html = page(alice, workflow)
    assert f'id="waiting-train">{WAITS}</div>' in html  # the task's row
    assert f"<b>{WAITS}</b>" in html and REASON.replace("'", "&#x27;") in html  # the timeline, the reason kept
    assert f"{WAITS.lower()}…" in html  # the timeline's "now"
    assert statuses(alice, workflow) == {"train": WAITS}


def test_without_a_machine_pool_that_could_help_it_stays_not_schedulable_yet(gpu, alice):
    """The cpu platform's pod selects nodes no machine pool makes; a gpu pod asking for more GPUs than the
    machine pool's instance type has would not fit its node either."""
    workflow = WorkflowFactory(pool=gpu, submitted_by=alice, status="WAITING")
    waiting_task(workflow, "cpu", gpus=0, name="prep")
    waiting_task(workflow, "gpu-t4-spot", gpus=4, name="big")  # g4dn.xlarge has one T4
    html = page(alice, workflow)
    assert "Waiting for machine pool" not in html
    assert "<b>Not schedulable yet</b>" in html and 'id="waiting-prep">Not schedulable yet</div>' in html
    old = f"Not schedulable yet: {REASON}"
    assert statuses(alice, workflow) == {"prep": old, "big": old}


def test_a_platform_on_a_backend_without_machine_pools_keeps_the_old_text(alice):
    store.apply("BACKEND", "plain", {"description": "no machine pools"}, CLI)
    store.apply_many("POD_TEMPLATE", default_templates(), CLI)
    store.apply("POOL", "cpu", {**pool_body("plain"), "platforms": {"x": {}}}, CLI)
    workflow = WorkflowFactory(pool=Pool.objects.get(name="cpu"), submitted_by=alice, status="WAITING")
    waiting_task(workflow, "x", gpus=0, name="t")
    assert statuses(alice, workflow) == {"t": f"Not schedulable yet: {REASON}"}
    assert "<b>Not schedulable yet</b>" in page(alice, workflow)


def test_the_task_follows_the_machine_pool_as_it_scales_up_until_it_is_at_its_maximum(gpu, alice):
    """As a cluster autoscaler would: the new node starting (in the inventory, not ready), then, with that node
    ready and the pod still not placed, room for one more; at the maximum with every node ready, the
    scheduler's reason is what stands."""
    workflow = WorkflowFactory(pool=gpu, submitted_by=alice, status="WAITING")
    waiting_task(workflow, "gpu-t4-spot", name="train")
    assert statuses(alice, workflow) == {"train": WAITS}
    label = {"node.kubernetes.io/machinepool": "gpu-t4-spot"}
    first = NodeFactory(backend=gpu.backend, name="gpu-t4-spot-a1", labels=label, ready=False)
    starting = "Waiting for machine pool gpu-t4-spot: node gpu-t4-spot-a1 is starting (1 of max 4)"
    assert statuses(alice, workflow) == {"train": starting}
    assert f'id="waiting-train">{starting}</div>' in page(alice, workflow)
    first.ready = True
    first.save(update_fields=["ready"])
    assert statuses(alice, workflow) == {"train": "Waiting for machine pool gpu-t4-spot to add a node (1 → 2 of max 4)"}
    for index in range(2, 5):
        NodeFactory(backend=gpu.backend, name=f"gpu-t4-spot-a{index}", labels=label)
    assert statuses(alice, workflow) == {"train": f"Not schedulable yet: {REASON}"}


def test_running_and_finished_tasks_have_no_status_message(gpu, alice):
    workflow = WorkflowFactory(pool=gpu, submitted_by=alice, status="RUNNING")
    TaskFactory(workflow=workflow, name="run", platform="gpu-t4-spot", status=TaskStatus.RUNNING, node="n-1")
    done = {"status": TaskStatus.FAILED, "error": "exit code 1", "finished_at": timezone.now()}
    TaskFactory(workflow=workflow, name="done", platform="gpu-t4-spot", **done)
    assert statuses(alice, workflow) == {"run": "", "done": ""}


def test_the_cli_shows_what_the_task_waits_for(gpu, alice):
    workflow = WorkflowFactory(pool=gpu, submitted_by=alice, status="WAITING")
    waiting_task(workflow, "gpu-t4-spot", name="train")
    out = StringIO()
    call_command("workflow", "show", workflow.workflow_id, "--format", "json", stdout=out)
    assert [task["status_message"] for task in json.loads(out.getvalue())["tasks"]] == [WAITS]
    text = StringIO()
    call_command("workflow", "show", workflow.workflow_id, stdout=text)
    assert WAITS in text.getvalue()


def test_many_waiting_tasks_cost_the_queries_of_one(gpu, alice, django_assert_num_queries):
    """The page and the detail answer: the would-be nodes are found once for all the tasks' platforms."""
    workflow = WorkflowFactory(pool=gpu, submitted_by=alice, status="WAITING")
    waiting_task(workflow, "gpu-t4-spot", name="t0")
    waiting_task(workflow, "cpu", gpus=0, name="c0")
    client = Client()
    client.force_login(alice)
    url = f"/workflows/{workflow.workflow_id}/"
    counted = {}
    for door, read in (("page", lambda: client.get(url)), ("api", lambda: statuses(alice, workflow))):
        read()  # the process caches warm, as on a live server
        counted[door] = len(queries_of(read))
    for index in range(1, 12):
        waiting_task(workflow, "gpu-t4-spot", name=f"t{index}")
        waiting_task(workflow, "cpu", gpus=0, name=f"c{index}")
    with django_assert_num_queries(counted["page"]):
        html = client.get(url).content.decode()
    assert html.count(f"<b>{WAITS}</b>") == 12
    with django_assert_num_queries(counted["api"]):
        assert list(statuses(alice, workflow).values()).count(WAITS) == 12
