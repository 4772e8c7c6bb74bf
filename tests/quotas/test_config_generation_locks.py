"""The config generation's row is locked only at commit (portal.generation): real PostgreSQL, two sessions
(threads, each with its own Django connection) coordinated by events and by what pg_stat_activity says one
waits for. A config write no longer holds the generation for its transaction's length, so it neither
deadlocks with a session that takes another row lock first nor makes a second config writer wait."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection, transaction

from pools.models import Platform
from portal import generation
from quotas.models import NodePool, Quota
from quotas.services.admission_passes import admission_pass
from tests.factories import DepartmentFactory, NodePoolFactory, PlatformFactory, PoolFactory
from tests.polling import wait_until
from tests.quotas import gpu_cluster as gc
from workflows.models import WorkflowStatus

pytestmark = pytest.mark.django_db(transaction=True)


class Session(threading.Thread):
    """`body` in a thread on a connection of its own; `pid` is its backend, `error` what it raised."""

    def __init__(self, body: Callable[[], None]) -> None:
        super().__init__(daemon=True)
        self.body, self.pid, self.error = body, None, None
        self.started_up = threading.Event()

    def run(self) -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                self.pid = cursor.fetchone()[0]
                cursor.execute("SET lock_timeout = '60s'")  # a regression fails the test instead of hanging it
            self.started_up.set()
            self.body()
        except Exception as error:  # noqa: BLE001  (asserted by the test)
            self.error = error
        finally:
            self.started_up.set()
            connection.close()


def run(*sessions: Session) -> None:
    """Start the sessions (in order, each once connected) and wait for them: each must end without error."""
    for session in sessions:
        session.start()
        session.started_up.wait(30)
    for session in sessions:
        session.join(90)
        assert not session.is_alive()
    assert [session.error for session in sessions] == [None] * len(sessions)


def waiting(session: Session) -> bool:
    """The session now waits for a lock (a row's, or a transaction's it must outlive)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")  # a transaction sees one snapshot of the statistics
        cursor.execute("SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", [session.pid])
        row = cursor.fetchone()
        return bool(row and row[0])


def current() -> str | None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {generation.read_sql(connection.vendor)}")
        return cursor.fetchone()[0]


@pytest.fixture
def config():
    pool = PoolFactory(name="gen-locks")
    first, second = PlatformFactory(pool=pool, name="first"), PlatformFactory(pool=pool, name="second")
    node_pool = NodePoolFactory(name="gen-locks", backend=pool.backend)
    return first, second, node_pool


def test_a_config_write_and_a_row_lock_taken_in_the_other_order_do_not_deadlock(config):
    """A writes a platform, B locks a node pool (admission's lock) then writes another platform, A then wants
    the node pool: with the generation locked from A's write on, B waited for A and A for B."""
    first, second, node_pool = config
    a_wrote, b_locked, b_wrote = threading.Event(), threading.Event(), threading.Event()

    def a() -> None:
        with transaction.atomic():
            Platform.objects.filter(pk=first.pk).update(description="a")
            a_wrote.set()
            assert b_locked.wait(30)
            wait_until(lambda: b_wrote.is_set() or waiting(sessions[1]), what="B wrote or waits")
            NodePool.objects.select_for_update().get(pk=node_pool.pk)

    def b() -> None:
        assert a_wrote.wait(30)
        with transaction.atomic():
            NodePool.objects.select_for_update().get(pk=node_pool.pk)
            b_locked.set()
            Platform.objects.filter(pk=second.pk).update(description="b")
            b_wrote.set()
            wait_until(lambda: waiting(sessions[0]), what="A waits for the node pool")

    before = current()
    run(*(sessions := [Session(a), Session(b)]))
    assert dict(Platform.objects.filter(pool=first.pool).values_list("name", "description")) == {
        "first": "a",
        "second": "b",
    }
    assert current() != before


def test_a_config_write_committing_behind_a_foreign_key_check_does_not_deadlock(config):
    """B writes a platform and a quota of a node pool that A holds (the quota's foreign key is checked at
    B's commit, and waits for A); A then writes a platform and commits. B's commit must not take the
    generation before its checks: it would wait for A while holding what A's commit needs."""
    first, second, node_pool = config
    department = DepartmentFactory(name="gen-locks")
    Quota.objects.filter(department=department).delete()
    a_locked = threading.Event()

    def a() -> None:
        with transaction.atomic():
            NodePool.objects.select_for_update().get(pk=node_pool.pk)
            a_locked.set()
            wait_until(lambda: waiting(sessions[1]), what="B's commit waits for the node pool")
            Platform.objects.filter(pk=first.pk).update(description="a")

    def b() -> None:
        assert a_locked.wait(30)
        with transaction.atomic():
            Platform.objects.filter(pk=second.pk).update(description="b")
            Quota.objects.create(node_pool_id=node_pool.pk, department=department, resource="gpu", deserved=1)

    before = current()
    run(*(sessions := [Session(a), Session(b)]))
    assert Quota.objects.filter(department=department, node_pool=node_pool).count() == 1
    assert set(Platform.objects.filter(pool=first.pool).values_list("description", flat=True)) == {"a", "b"}
    assert current() != before


def test_a_platform_save_does_not_wait_for_another_open_config_transaction(config):
    first, second, _ = config
    a_saved, b_committed = threading.Event(), threading.Event()
    seen = {}

    def a() -> None:
        with transaction.atomic():
            first.description = "a"
            first.save()
            a_saved.set()
            wait_until(lambda: b_committed.is_set() or waiting(sessions[1]), what="B committed or waits")
            seen["b committed while A was open"] = b_committed.is_set()

    def b() -> None:
        assert a_saved.wait(30)
        with transaction.atomic():
            second.description = "b"
            second.save()
        b_committed.set()

    run(*(sessions := [Session(a), Session(b)]))
    assert seen == {"b committed while A was open": True}


def test_the_generation_changes_at_each_committed_write_once_and_never_for_a_rolled_back_one(config):
    first, second, node_pool = config
    before = current()
    with pytest.raises(RuntimeError), transaction.atomic():
        Platform.objects.filter(pk=first.pk).update(description="rolled back")
        inside = current()  # the transaction's own value: what it caches there is keyed under it alone
        raise RuntimeError
    assert current() == before != inside

    with transaction.atomic():
        Platform.objects.filter(pk=first.pk).update(description="x")
        Platform.objects.filter(pool=first.pool).update(description="y")  # two rows
        NodePool.objects.filter(pk=node_pool.pk).update(description="y")
        second.save()
        last = current()  # the transaction's own value, from its last write (sequence value n)
    writer, n = last.split(".")
    # written once, at the commit: the next sequence value after the last write's, under the writer's id
    after = current()
    assert after == f"{writer}.{int(n) + 1}" and before != after

    NodePool.objects.filter(pk=-1).update(description="z")  # no row written: nothing changed
    assert current() == after
    second.save()
    assert current() not in (before, after)


def test_truncate_changes_the_generation(config):
    before = current()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE quotas_nodepool CASCADE")
    assert current() != before


def test_submissions_and_admission_passes_write_no_enrolled_table(django_capture_on_commit_callbacks):
    """The submission path never waits for the generation's row: neither a submission nor the admission pass
    after it writes a platform, a pool or a node pool (each would change the generation)."""
    with gc.cluster(a100_80=2) as server:
        gc.configure(server, ["a100-80"])
        users = gc.teams({"research": ["vision"]})
        gc.set_quotas("a100-80gb", "a100-80", {"research": 8}, {"vision": 8})
        before = current()
        admitted = gc.submit_gpus(users["vision"], "w0", 8, "a100-80", django_capture_on_commit_callbacks)
        queued = gc.submit_gpus(users["vision"], "w1", 4, "a100-80", django_capture_on_commit_callbacks)
        admission_pass(NodePool.objects.get(name="a100-80gb"))
        assert (admitted.status, queued.status) == (WorkflowStatus.WAITING, WorkflowStatus.QUEUED)
        assert current() == before is not None
