"""The reconciler and the reaper (`workflows.reconcile`): lost messages re-queued, orphans reaped, periodic jobs
that never overlap."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from clusters.models import Backend
from configs import store
from tests.workflows.conftest import CLI, NAMESPACE
from workflows import reconcile
from workflows.lifecycle.create import create_pods
from workflows.models import Task, TaskStatus, Workflow


def test_reconcile_requeues_pending_workflows_whose_message_was_lost(submitted, backend, settings, monkeypatch):
    from workflows import tasks as jobs

    settings.WORKFLOW_PENDING_GRACE_SECONDS = 60
    enqueued = []
    monkeypatch.setattr(jobs.create_pods, "delay", enqueued.append)
    fresh, old = submitted(name="fresh"), submitted(name="old")
    Task.objects.filter(workflow=old).update(created_at=timezone.now() - timedelta(minutes=5))
    result = reconcile.reconcile_backend(backend.pk)
    assert result["requeued"] == 1 and enqueued == [old.pk]
    assert fresh.tasks.get().status == TaskStatus.PENDING


def test_reaper_deletes_orphans_and_old_finished_pods_only(submitted, kube_server, backend, run_on_commit):
    running = submitted(name="running", platform="forever")
    finished = submitted(name="finished", platform="forever")
    create_pods(running.pk)
    create_pods(finished.pk)
    Workflow.objects.filter(pk=finished.pk).update(status="COMPLETED", finished_at=timezone.now())
    Task.objects.filter(workflow=finished).update(status="COMPLETED")
    orphan = {
        "metadata": {"name": "ghost-1-t0", "labels": {"pool-portal/instance": "test-portal"}},
        "spec": {"containers": [{"name": "t0", "image": "x"}]},
    }
    foreign = {
        "metadata": {"name": "theirs-1-t0", "labels": {"pool-portal/instance": "another-portal"}},
        "spec": {"containers": [{"name": "t0", "image": "x"}]},
    }
    kube_server.emulator.create("pods", orphan, NAMESPACE)
    kube_server.emulator.create("pods", foreign, NAMESPACE)
    assert reconcile.reap_backend(backend.pk) == 1  # the orphan; the finished one is kept for its retention
    names = {p["metadata"]["name"] for p in kube_server.emulator.list("pods", NAMESPACE)}
    assert names == {"running-1-t0", "finished-1-t0", "theirs-1-t0"}
    later = timezone.now() + timedelta(seconds=301)
    assert reconcile.reap_backend(backend.pk, now=later) == 1
    names = {p["metadata"]["name"] for p in kube_server.emulator.list("pods", NAMESPACE)}
    assert names == {"running-1-t0", "theirs-1-t0"}
    assert reconcile.run_locked("reaper-test", reconcile.reap_all)["deleted"] == 0


def test_a_second_backend_on_the_same_cluster_reaps_nothing_of_the_first(
    submitted, kube_server, backend, run_on_commit
):
    """Backend rows may share a cluster (say one per namespace): each lists every pod of this portal there."""
    store.apply("BACKEND", "sim-team-b", {"namespace": "team-b", "api_url": kube_server.url}, CLI)
    twin = Backend.objects.get(name="sim-team-b")
    workflow = submitted(platform="forever")
    create_pods(workflow.pk)
    assert reconcile.reap_backend(twin.pk) == 0
    assert run_on_commit(reconcile.reconcile_backend, twin.pk)["tasks"] == 0
    assert len(kube_server.emulator.list("pods", NAMESPACE)) == 1


def test_periodic_jobs_do_not_overlap(transactional_db):
    """Another process (here: another thread, with its own database session) holds the lock: skip."""
    import threading

    from django.db import connection

    held, release = threading.Event(), threading.Event()

    def holder():
        try:
            with reconcile.singleton("workflows:x") as got:
                assert got
                held.set()
                release.wait(10)
        finally:
            connection.close()

    thread = threading.Thread(target=holder)
    thread.start()
    try:
        assert held.wait(10)
        assert reconcile.run_locked("x", lambda: {"ran": True}) == {"skipped": True}
    finally:
        release.set()
        thread.join(10)
    assert reconcile.run_locked("x", lambda: {"ran": True}) == {"ran": True}
