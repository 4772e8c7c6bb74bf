"""Delegation to KAI-Scheduler and Kueue (quotas.services.delegation) against the simulated cluster serving their
CRDs: the quota tree built from the rows, objects validated and applied, kept in step after a quota change, a
project deletion and a switch of scheduler, nodes labelled for the shards and flavors, the scheduler's status
read back, and a cluster that is down never failing the config write.

Fleet (tests/quotas/conftest.py): node pool h100 (label, h100-node-0..3), a100 (platform train/a100: a100-node-0,
a100-node-1), sim-default (the other 23 nodes); teams research (vision, speech) and ops (infer)."""

from __future__ import annotations

import logging

import pytest
from django.core.management import call_command

from clusters.models import Backend
from configs import store
from quotas import tasks
from quotas.services import delegation
from quotas.services.quotas import set_quota
from quotas.services.scheduler_status import scheduler_status
from teams.models import Project
from tests.polling import wait_until
from tests.quotas.conftest import A100_MEMBERS, CLI, H100_NODES, H100_PRODUCT

GI = 2**30
MANAGED = "app.kubernetes.io/managed-by=pool-portal,pool-portal/backend=sim"
KAI_QUEUES = "queues.scheduling.run.ai"
TEAMS = ["research", "vision", "speech", "ops", "infer"]


@pytest.fixture
def cluster(kube_server):
    kube_server.emulator.serve_schedulers("kai", "kueue")
    return kube_server.emulator


def delegate(backend: Backend, scheduler: str, kube_server, **more) -> Backend:
    """The BACKEND document again, with `quota_scheduler` (its other fields as the fixture wrote them)."""
    document = {"description": "simulated", "namespace": "default", "api_url": kube_server.url}
    store.apply("BACKEND", backend.name, {**document, "quota_scheduler": scheduler, **more}, CLI)
    return Backend.objects.get(pk=backend.pk)


def departments_guarantee(gpus: int = 16) -> None:
    """Departments' deserved GPUs in every node pool, so their projects may be given some."""
    for node_pool in ("h100", "a100"):
        for department in ("research", "ops"):
            set_quota(None, node_pool, "department", department, "gpu", deserved=gpus)


def names(cluster, plural: str, namespace: str | None = None) -> list[str]:
    return sorted(o["metadata"]["name"] for o in cluster.list(plural, namespace, label_selector=MANAGED))


def node_label(cluster, node: str, key: str) -> str | None:
    return cluster.get("nodes", node)["metadata"].get("labels", {}).get(key)


def test_the_tree_is_built_from_node_pools_rows_and_capacities(carved):
    departments_guarantee()
    set_quota(None, "h100", "project", "vision", "gpu", deserved=8, limit=16, weight=2)
    Project.objects.filter(name="vision").update(priority=3)
    tree = delegation.tree_for(carved)
    assert (tree.backend, tree.namespace) == ("sim", "default")
    default, a100, h100 = tree.node_pools
    assert (default.name, default.default, default.node_names) == ("sim-default", True, ())
    assert a100.node_names == tuple(A100_MEMBERS) and not a100.node_labels
    assert h100.node_labels == {"nvidia.com/gpu.product": H100_PRODUCT} and h100.capacity["gpu"] == 4 * 8
    assert [d.name for d in tree.departments] == ["ops", "research"]
    vision = tree.departments[1].projects[1]
    assert (vision.name, vision.priority) == ("vision", 3)
    assert (vision.quotas["h100"]["gpu"].deserved, vision.quotas["h100"]["gpu"].limit) == (8, 16)
    assert vision.quotas["h100"]["gpu"].weight == 2


def test_kai_queues_are_applied_validated_and_the_shards_labelled(carved, cluster, kube_server, caplog):
    departments_guarantee()
    set_quota(None, "h100", "project", "vision", "gpu", deserved=8)
    with caplog.at_level(logging.INFO, logger="quotas.services.delegation"):
        result = delegation.sync_scheduler_objects(delegate(carved, "kai", kube_server))
    expected = sorted([*TEAMS, *(f"a100-{t}" for t in TEAMS), *(f"h100-{t}" for t in TEAMS)])
    assert sorted(name.split()[1] for name in result.created) == expected and not result.deleted
    assert names(cluster, KAI_QUEUES) == expected
    vision = cluster.get(KAI_QUEUES, "h100-vision")
    assert vision["spec"]["parentQueue"] == "h100-research" and vision["spec"]["resources"]["gpu"]["quota"] == 8
    assert vision["metadata"]["labels"]["kai.scheduler/node-pool"] == "h100"
    assert len(result.labelled) == 29  # every node: KAI's shard label, and the node-pool label (Default, a100)
    assert {node_label(cluster, n, "kai.scheduler/node-pool") for n in H100_NODES} == {"h100"}
    assert {node_label(cluster, n, "kai.scheduler/node-pool") for n in A100_MEMBERS} == {"a100"}
    assert node_label(cluster, "cpu-node-0", "kai.scheduler/node-pool") is None  # the Default shard: no label
    assert node_label(cluster, "cpu-node-0", "pool-portal/node-pool") == "sim-default"  # confinement's label
    again = delegation.sync_scheduler_objects(carved.pk)  # nothing changed: replaced in place, nothing deleted
    assert not again.created and not again.deleted and len(again.replaced) == 15
    assert "15 scheduler object(s) created" in caplog.text


def test_a_quota_change_and_a_project_deletion_follow_after_commit(
    carved, cluster, kube_server, django_capture_on_commit_callbacks
):
    departments_guarantee()
    with django_capture_on_commit_callbacks(execute=True) as queued:
        delegate(carved, "kai", kube_server)
    assert len(queued) == 1 and "h100-vision" in names(cluster, KAI_QUEUES)
    cluster.create(KAI_QUEUES, {"apiVersion": "scheduling.run.ai/v2", "kind": "Queue", "metadata": {"name": "theirs"}})
    with django_capture_on_commit_callbacks(execute=True) as queued:
        set_quota(None, "h100", "project", "vision", "gpu", deserved=4, limit=6)
    assert len(queued) == 1  # one sync per transaction, however many hooks asked for it
    assert cluster.get(KAI_QUEUES, "h100-vision")["spec"]["resources"]["gpu"] == {
        "quota": 4,
        "limit": 6,
        "overQuotaWeight": 1,
    }
    with django_capture_on_commit_callbacks(execute=True):
        Project.objects.get(name="speech").delete()
    assert not [n for n in names(cluster, KAI_QUEUES) if n.endswith("speech")]
    assert "h100-vision" in names(cluster, KAI_QUEUES)
    assert cluster.get(KAI_QUEUES, "theirs") is not None  # not the portal's: never touched


def test_kueue_objects_and_a_switch_away_from_kai(carved, cluster, kube_server, django_capture_on_commit_callbacks):
    departments_guarantee()
    set_quota(None, "a100", "project", "infer", "gpu", deserved=4, limit=8)
    with django_capture_on_commit_callbacks(execute=True):
        delegate(carved, "kai", kube_server)
    with django_capture_on_commit_callbacks(execute=True):
        delegate(carved, "kueue", kube_server)
    assert names(cluster, KAI_QUEUES) == []  # the scheduler changed: KAI's queues went
    assert names(cluster, "resourceflavors.kueue.x-k8s.io") == ["a100", "h100", "sim-default"]
    assert cluster.get("resourceflavors.kueue.x-k8s.io", "a100")["spec"] == {
        "nodeLabels": {"pool-portal/node-pool": "a100"}
    }
    assert names(cluster, "clusterqueues.kueue.x-k8s.io") == ["infer", "speech", "vision"]
    assert names(cluster, "localqueues.kueue.x-k8s.io", "default") == ["infer", "speech", "vision"]
    infer = cluster.get("clusterqueues.kueue.x-k8s.io", "infer")["spec"]
    a100 = next(f for f in infer["resourceGroups"][0]["flavors"] if f["name"] == "a100")
    assert {"name": "nvidia.com/gpu", "nominalQuota": 4, "borrowingLimit": 4} in a100["resources"]
    assert {node_label(cluster, n, "pool-portal/node-pool") for n in A100_MEMBERS} == {"a100"}
    assert node_label(cluster, "h100-node-0", "pool-portal/node-pool") is None  # selected by its own label
    with django_capture_on_commit_callbacks(execute=True):
        delegate(carved, "portal", kube_server)  # back to the portal: nothing of ours stays
    assert (
        names(cluster, "clusterqueues.kueue.x-k8s.io") == [] and names(cluster, "resourceflavors.kueue.x-k8s.io") == []
    )


def test_portal_backends_queue_nothing(carved, cluster, django_capture_on_commit_callbacks):
    departments_guarantee()
    with django_capture_on_commit_callbacks(execute=True) as queued:
        set_quota(None, "h100", "project", "vision", "gpu", deserved=4)
    assert queued == [] and delegation.render(carved) == []
    assert not delegation.delegates("h100")


def test_delegates_follows_the_backend(carved, kube_server):
    delegate(carved, "kueue", kube_server)
    assert delegation.delegates("h100") and delegation.delegates("sim-default") and not delegation.delegates("x")


def test_kai_status_is_read_back_per_project(carved, cluster, kube_server):
    backend = delegate(carved, "kai", kube_server)
    delegation.sync_scheduler_objects(backend)
    cluster.set_status(
        KAI_QUEUES,
        "a100-vision",
        {
            "allocated": {"nvidia.com/gpu": "6", "cpu": "4", "memory": "16Gi"},
            "allocatedNonPreemptible": {"nvidia.com/gpu": "4"},
            "requested": {"nvidia.com/gpu": "10"},
            "conditions": [{"type": "Ready", "status": "True", "message": "over quota by 2 GPUs"}],
        },
    )
    status = scheduler_status(backend)
    assert status.scheduler == "kai"
    assert status.allocated("a100", "vision") == {"gpu": 6, "cpu": 4000, "memory": 16 * GI}
    vision = next(u for u in status.usage if (u.node_pool, u.project) == ("a100", "vision"))
    assert (vision.queue, vision.non_preemptible, vision.requested) == ("a100-vision", {"gpu": 4}, {"gpu": 10})
    assert status.allocated("h100", "vision") == {} and status.messages == {"a100-vision": "over quota by 2 GPUs"}


def test_kueue_status_is_read_back_per_project(carved, cluster, kube_server):
    backend = delegate(carved, "kueue", kube_server)
    delegation.sync_scheduler_objects(backend)
    usage = [{"name": "nvidia.com/gpu", "total": "6", "borrowed": "2"}, {"name": "memory", "total": "64Gi"}]
    cluster.set_status(
        "clusterqueues.kueue.x-k8s.io",
        "vision",
        {"flavorsUsage": [{"name": "a100", "resources": usage}], "pendingWorkloads": 3, "admittedWorkloads": 2},
    )
    status = scheduler_status(backend)
    assert status.allocated("a100", "vision") == {"gpu": 6, "memory": 64 * GI}
    vision = next(u for u in status.usage if (u.node_pool, u.project) == ("a100", "vision"))
    assert vision.borrowed == {"gpu": 2, "memory": 0}
    assert (
        status.pending_workloads == {"infer": 0, "speech": 0, "vision": 3} and status.admitted_workloads["vision"] == 2
    )


def test_a_cluster_down_never_fails_the_config_write(
    carved, cluster, kube_server, django_capture_on_commit_callbacks, caplog
):
    departments_guarantee()
    with django_capture_on_commit_callbacks(execute=True):
        delegate(carved, "kai", kube_server)
    cluster.fail_next("*", "*", status=503, times=None)
    with caplog.at_level(logging.WARNING, logger="quotas.tasks"), django_capture_on_commit_callbacks(execute=True):
        result = set_quota(None, "h100", "project", "vision", "gpu", deserved=6)
    assert result.revision is not None  # stored, whatever the cluster says
    assert "scheduler objects not written" in caplog.text and "503" in caplog.text
    cluster.clear_failures()
    assert cluster.get(KAI_QUEUES, "h100-vision")["spec"]["resources"]["gpu"]["quota"] == 0
    assert tasks.sync_all_scheduler_objects.delay().get() == 1  # the periodic resync puts it in step
    assert cluster.get(KAI_QUEUES, "h100-vision")["spec"]["resources"]["gpu"]["quota"] == 6


def test_the_command_prints_and_applies(carved, cluster, kube_server, capsys):
    delegate(carved, "kueue", kube_server)
    call_command("scheduler_objects", "sim")
    printed = capsys.readouterr().out
    assert printed.startswith("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\n")
    assert printed.count("kind: ClusterQueue") == 3 and names(cluster, "clusterqueues.kueue.x-k8s.io") == []
    call_command("scheduler_objects", "sim", "--apply", "--format", "json")
    assert '"created": [' in capsys.readouterr().out
    assert names(cluster, "clusterqueues.kueue.x-k8s.io") == ["infer", "speech", "vision"]


def test_the_task_retries_a_cluster_that_is_down_on_a_real_worker(
    redis_worker, carved, cluster, kube_server, monkeypatch
):
    departments_guarantee()
    monkeypatch.setattr(tasks, "retry_countdown", lambda retries: 0)  # the worker runs in this process
    cluster.fail_next("create", "queues", status=503, times=2)
    delegate(carved, "kai", kube_server)  # committed: the sync goes to Redis, the worker runs it
    wait_until(lambda: len(names(cluster, KAI_QUEUES)) == 15, timeout=30, what="the queues, after two retries")
    creates = [r for r in cluster if r.method == "POST" and r.url.path.endswith("/queues")]
    assert len(creates) == 15 + 2  # the first queue's create failed twice, then every one went through


def test_the_periodic_resync_is_in_beats_schedule_and_expires_before_its_next_run():
    from portal.celery import app

    entry = app.conf.beat_schedule["quota-schedulers-resync"]
    assert entry["task"] == "quotas.tasks.sync_all_scheduler_objects"
    assert entry["options"]["expires"] == tasks.RESYNC_EXPIRES < entry["schedule"]
