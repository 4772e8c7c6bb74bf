"""Spot advice (issue #33, the seed's "Spot Instance Considerations"): a workflow bound for a spot platform
without a RESCHEDULE for an interruption, or with a long (or no) exec timeout, is warned in its preview (the
service, the REST dry run and the submit page) and when stored; the submission still goes. A pool whose platform
keeps state (persistentVolumeClaim volumes) on spot capacity is flagged (pool preview, Pool capacity page)."""

from __future__ import annotations

import pytest
import yaml
from django.urls import reverse
from rest_framework.test import APIClient

from configs import store
from pools.models import Pool
from pools.services.machine_pool_platforms import make_platform
from pools.services.preview import PreviewRequest, preview
from pools.services.spot_capacity import spot_capacity
from tests.clusters.conftest import CLI
from tests.clusters.machine_pools import machine_pools  # noqa: F401 (a fixture: backend `sim` + machine pools)
from workflows.models import Workflow
from workflows.services import SubmitRequest, submit

NO_RESCHEDULE = "the task has no RESCHEDULE exit action for an interruption (exit code 3001 or 143)"
RESOURCES = {"cpu": 2, "memory": "8Gi", "storage": "10Gi", "gpu": 1}


@pytest.fixture
def platforms(machine_pools):  # noqa: F811
    make_platform("gpu-zero", CLI, platform="t4-spot")  # spot, no node yet: a would-be spot node
    make_platform("additional", CLI)  # on-demand
    return Pool.objects.get(name="rosa")


def document(platform="t4-spot", timeout=None, exit_actions=None, name="train") -> dict:
    task = {"name": "train", "image": "my-ml-image", "command": ["train"], "resource": "default"}
    if exit_actions:
        task["exitActions"] = exit_actions
    resources = {**RESOURCES, "platform": platform} if platform == "t4-spot" else {"cpu": 1, "memory": "1Gi",
                                                                                   "platform": platform}  # fmt: skip
    workflow = {"name": name, "resources": {"default": resources}, "tasks": [task]}
    if timeout:
        workflow["timeout"] = {"exec_timeout": timeout}
    return {"version": 2, "workflow": workflow}


def warnings_of(who, **fields) -> list[str]:
    return submit(SubmitRequest(pool="rosa", spec=document(**fields), who=who, dry_run=True)).warnings


def test_which_platforms_run_on_spot(platforms):
    make_platform("ml-training", CLI)  # spot, with two nodes in the inventory
    on_spot = {
        platforms.platforms.get(pk=pk).name: said
        for pk, said in spot_capacity(platforms.platforms.select_related("pool")).items()
    }
    assert on_spot == {  # additional is on-demand
        "t4-spot": "machine pool gpu-zero (no node yet)",
        "ml-training": "spot nodes ml-training-node-0, ml-training-node-1",
    }


def test_a_spot_task_without_reschedule_or_with_a_long_timeout_is_warned(platforms, admin_user):
    said = warnings_of(admin_user)
    where = "task train: platform t4-spot runs on spot capacity (machine pool gpu-zero (no node yet))"
    assert any(w.startswith(where) and NO_RESCHEDULE in w for w in said), said
    unbounded = "the workflow has no exec timeout (it may run longer than 4h)"
    assert any(w.startswith(where) and unbounded in w for w in said), said
    long = warnings_of(admin_user, timeout="12h", exit_actions={"RESCHEDULE": "3001,143"})
    assert [w for w in long if "spot" in w] == [
        f"{where}, and the workflow has an exec timeout of 12h (more than 4h): the longer a task runs on spot, the "
        "likelier a reclaim, and a retry starts over unless the task checkpoints (a preStop hook that saves its state)"
    ]
    assert not [w for w in warnings_of(admin_user, timeout="1h", exit_actions={"RESCHEDULE": "143"}) if "spot" in w]
    assert any(NO_RESCHEDULE in w for w in warnings_of(admin_user, timeout="1h", exit_actions={"RESCHEDULE": "1"}))
    assert not [w for w in warnings_of(admin_user, platform="additional") if "spot" in w]  # on-demand: no advice


def test_the_pools_default_exit_actions_count(platforms, admin_user):
    body = store.show("POOL", "rosa")
    store.apply("POOL", "rosa", {**body, "default_exit_actions": {"RESCHEDULE": "3001"}}, CLI)
    assert not [w for w in warnings_of(admin_user, timeout="2h") if "spot" in w]


def test_warnings_are_not_errors_the_submission_goes_and_keeps_them(platforms, admin_user):
    result = submit(SubmitRequest(pool="rosa", spec=document(timeout="1h"), who=admin_user))
    assert result.workflow_id and any(NO_RESCHEDULE in w for w in result.warnings)
    assert any(NO_RESCHEDULE in w for w in Workflow.objects.get(workflow_id=result.workflow_id).warnings)


def test_the_rest_dry_run_and_the_submit_page_show_the_advice(platforms, admin_user, admin_client):
    api = APIClient()
    api.force_authenticate(admin_user)
    answer = api.post("/api/pool/rosa/workflow?dry_run=true", {"file": yaml.safe_dump(document())}, format="json")
    assert answer.status_code == 200, answer.content
    assert any(NO_RESCHEDULE in w for w in answer.json()["warnings"])
    page = admin_client.post(reverse("selfservice:preview", args=["rosa"]), {"spec": yaml.safe_dump(document()),
                                                                             "priority": "NORMAL"})  # fmt: skip
    assert page.status_code == 200
    assert "no RESCHEDULE exit action for an interruption" in page.content.decode()


def test_a_platform_keeping_state_on_spot_is_flagged(platforms, admin_user, admin_client):
    store.apply("POD_TEMPLATE", "pgdata", {"spec": {"volumes": [
        {"name": "data", "persistentVolumeClaim": {"claimName": "pgdata"}}]}}, CLI)  # fmt: skip
    body = store.show("POOL", "rosa")
    db = {"override_pod_template": ["machinepool-gpu-zero", "pgdata"]}
    onprem = {"override_pod_template": ["machinepool-additional", "pgdata"]}
    store.apply("POOL", "rosa", {**body, "platforms": {**body["platforms"], "db": db, "db-on-demand": onprem}}, CLI)
    flag = (
        "platform db keeps state on spot capacity: persistentVolumeClaim volumes (pgdata) on machine pool gpu-zero "
        "(no node yet)"
    )
    said = preview(PreviewRequest(pool="rosa", platform="db", resources=dict(RESOURCES)))["warnings"]
    assert any(w.startswith(flag) for w in said), said
    calm = preview(PreviewRequest(pool="rosa", platform="db-on-demand", resources={"cpu": 1, "memory": "1Gi"}))
    assert not [w for w in calm["warnings"] if "spot" in w]
    pool = Pool.objects.get(name="rosa")
    page = admin_client.get(reverse("admin:pools_poolcapacity_change", args=[pool.pk])).content.decode()
    assert "Spot advice" in page and flag in page
    tasks = warnings_of(admin_user, platform="db", timeout="1h", exit_actions={"RESCHEDULE": "3001"})
    assert any("its pod keeps state in persistentVolumeClaim volumes (pgdata)" in w for w in tasks), tasks
