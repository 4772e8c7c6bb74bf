"""One admission pass at a time per node pool: two passes started together (two threads, two database
connections, real PostgreSQL) both wait on the node pool's row lock; then one admits every queued workflow and
the other, let in after it commits, finds nothing left to admit."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from quotas.models import NodePool, Quota
from quotas.services.admission_passes import admission_pass
from tests.polling import wait_until
from tests.quotas import gpu_cluster as gc
from workflows.models import TaskEvent, Workflow, WorkflowStatus


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_passes_admit_each_workflow_once(django_capture_on_commit_callbacks):
    with gc.cluster(a100_80=2) as server:
        gc.configure(server, ["a100-80"])
        users = gc.teams({"research": ["vision"]})
        # vision is guaranteed nothing yet and may not borrow: its submissions wait (a limit of 0 would refuse them)
        gc.set_quotas("a100-80gb", "a100-80", {"research": 8}, {"vision": 0}, over_quota=False)
        queued = [
            gc.submit_gpus(users["vision"], f"w{i}", 2, "a100-80", django_capture_on_commit_callbacks) for i in range(4)
        ]
        assert {w.status for w in queued} == {WorkflowStatus.QUEUED}
        assert {w.queue_reason["code"] for w in Workflow.objects.all()} == {"NO_OVER_QUOTA"}
        # the guarantee given behind admission's back (no queue event): only the passes below admit
        Quota.objects.filter(project__name="vision", resource="gpu", node_pool__name="a100-80gb").update(
            deserved=8, limit=None
        )
        node_pool = NodePool.objects.get(name="a100-80gb").pk
        start, reports, errors = threading.Barrier(2), [], []

        def run() -> None:
            try:
                start.wait()
                reports.append(admission_pass(node_pool))
            except Exception as error:  # noqa: BLE001  (reported below)
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=run) for _ in range(2)]
        with transaction.atomic():  # hold the node pool's lock: both passes must queue behind it
            NodePool.objects.select_for_update().get(pk=node_pool)
            for thread in threads:
                thread.start()
            wait_until(lambda: _waiting_on_locks() == 2, timeout=20, what="both passes waiting on the lock")
        for thread in threads:
            thread.join(30)
        assert not errors
        admitted = sorted(name for report in reports for name in report.admitted)
        assert admitted == sorted(w.workflow_id for w in queued)  # every one once, none twice
        assert sorted(len(report.admitted) for report in reports) == [0, 4]
        for workflow in Workflow.objects.all():
            assert workflow.status != WorkflowStatus.QUEUED and not workflow.preemptible
            assert TaskEvent.objects.filter(task__workflow=workflow, kind="ADMITTED").count() == 1


def _waiting_on_locks() -> int:
    """Other sessions of this database now waiting for a row lock."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # a transaction sees one snapshot of the statistics
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' "
            "AND pid <> pg_backend_pid()"
        )
        return cursor.fetchone()[0]
