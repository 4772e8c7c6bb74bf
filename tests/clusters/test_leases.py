"""Watcher leases (clusters.leases): acquire, renew, take over after expiry, fence, and the fair share.

The lease logic against the test database (its clock decides expiry), the share as a pure function under
hypothesis (several replicas applying it in turn always end with each backend held once and nobody above
its share), and two in-process watchers over the kubesim emulator rebalancing as a second one joins.
The process-level proof (three watcher processes, five clusters, one SIGKILLed) is tests/scale/test_watcher_shards.py.
"""

from __future__ import annotations

import math
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.db.models.functions import Now
from django.utils import timezone
from hypothesis import given, settings
from hypothesis import strategies as st

from clusters.heartbeat import Beat, beat, replica_health
from clusters.leases import Leases, ReplicaReplaced, plan, shards, target
from clusters.models import Backend, Node, WatcherHeartbeat, WatcherLease, WatcherReplica
from tests.polling import wait_until
from workflows.watcher import WorkflowWatcher

pytestmark = pytest.mark.django_db


def backends(count: int) -> list[int]:
    return [Backend.objects.create(name=f"b{i}").pk for i in range(count)]


def replica(name: str, seconds: float = 30.0) -> Leases:
    leases = Leases("watch_cluster", name, seconds=seconds, renew_seconds=seconds / 3)
    leases.join()
    return leases


def test_one_holder_at_a_time_and_a_new_token_at_each_acquisition():
    [b] = backends(1)
    a, other = replica("a"), replica("b")
    a.ensure([b])
    first = a.acquire(b)
    assert first is not None and first.token == 1
    assert other.acquire(b) is None  # held and unexpired
    assert a.renew({b: first}) == []
    assert a.fence(first, {"pods": "7"})
    assert WatcherLease.objects.get(backend_id=b).versions == {"pods": "7"}
    assert a.release(first)
    second = other.acquire(b)
    assert second is not None and second.token == 2
    assert second.versions == {"pods": "7"}  # the next holder resumes from what the last one recorded
    assert not a.fence(first)  # released: the old holder's writes are refused
    assert a.renew({b: first}) == [b]


def test_an_expired_lease_is_taken_over_and_its_old_holder_fenced_off():
    [b] = backends(1)
    a, other = replica("a", seconds=0.3), replica("b")
    a.ensure([b])
    held = a.acquire(b)
    taken = wait_until(lambda: other.acquire(b), what="the lease expires and is taken")
    assert taken.token == held.token + 1
    assert not a.fence(held)  # its local deadline passed, and the row names another holder
    held.deadline = math.inf  # even a holder whose clock says it still may: the database refuses
    assert not a.fence(held, {"pods": "99"})
    assert a.renew({b: held}) == [b]
    assert WatcherLease.objects.get(backend_id=b).holder == "b"


def test_the_fence_refuses_a_write_once_the_lease_expired_in_the_database():
    [b] = backends(1)
    a = replica("a", seconds=0.2)
    a.ensure([b])
    held = a.acquire(b)
    held.deadline = math.inf  # a process whose local deadline lies (a paused VM, a skewed clock)
    wait_until(lambda: not WatcherLease.objects.filter(backend_id=b, expires_at__gt=Now()).exists())
    assert not a.fence(held)


def test_a_process_under_a_live_replica_name_takes_it_over_and_the_old_one_stops():
    [b] = backends(1)
    old = replica("pod-1")
    old.ensure([b])
    held = old.acquire(b)
    new = replica("pod-1")  # the container restarted: same pod name, a new process
    with pytest.raises(ReplicaReplaced):
        old.beat()
    again = new.acquire(b)  # its own name's lease: taken at once, no wait for the expiry
    assert again is not None and again.token == held.token + 1
    assert not old.fence(held)
    new.leave([again])
    assert WatcherLease.objects.get(backend_id=b).holder == ""
    assert not WatcherReplica.objects.filter(name="pod-1").exists()


def test_live_replicas_are_counted_from_their_beats():
    a = replica("a", seconds=0.3)
    replica("b")
    assert a.live_replicas() == 2
    wait_until(lambda: a.live_replicas() == 1, what="a's beat expires")
    a.beat()
    assert a.live_replicas() == 2


def test_writes_under_the_fence_roll_back_with_it():
    [b] = backends(1)
    a, other = replica("a", seconds=0.3), replica("b")
    a.ensure([b])
    held = a.acquire(b)
    wait_until(lambda: other.acquire(b))
    with transaction.atomic():
        if a.fence(held, {"nodes": "5"}):  # what a stale holder would write, had the fence passed
            Node.objects.create(backend_id=b, name="ghost")
    assert not Node.objects.filter(name="ghost").exists()
    assert WatcherLease.objects.get(backend_id=b).versions == {}


def test_shards_say_who_holds_what():
    ids = backends(2)
    a = replica("a")
    a.ensure(ids)
    a.acquire(ids[0])
    rows, replicas = shards("watch_cluster")
    assert [(r.backend, r.holder, r.live, r.token) for r in rows] == [("b0", "a", True, 1), ("b1", "", False, 0)]
    assert [r.name for r in replicas] == ["a"]


# ------------------------------------------------------------------------------------------ the share, pure

ids = st.lists(st.integers(0, 30), max_size=20, unique=True)


@given(held=ids, scope=ids, free=ids, replicas=st.integers(1, 8))
def test_a_plan_releases_only_what_it_holds_and_takes_only_what_is_free(held, scope, free, replicas):
    result = plan(held, scope, free, replicas)
    kept = set(held) - set(result.release)
    assert set(result.release) <= set(held)
    assert set(held) - set(scope) <= set(result.release)  # out of scope: always released
    assert set(result.acquire) <= (set(free) & set(scope)) - set(held)
    assert len(kept) + len(result.acquire) <= result.target == target(len(scope), replicas)


@settings(max_examples=200, deadline=None)
@given(
    backends_count=st.integers(0, 20),
    replicas=st.integers(1, 6),
    start=st.lists(st.integers(0, 6), max_size=20),
    order=st.randoms(use_true_random=False),
)
def test_replicas_applying_the_plan_in_turn_hold_every_backend_once_within_their_share(
    backends_count, replicas, start, order
):
    scope = list(range(backends_count))
    holder: dict[int, int | None] = {b: None for b in scope}
    for b, r in zip(scope, start, strict=False):  # whatever a previous run left: one replica may hold all
        holder[b] = r if r < replicas else None
    share = target(backends_count, replicas)
    for _ in range(3):  # rounds: each replica passes once, in an arbitrary order
        turns = list(range(replicas))
        order.shuffle(turns)
        for r in turns:
            mine = [b for b in scope if holder[b] == r]
            free = [b for b in scope if holder[b] is None]
            step = plan(mine, scope, free, replicas)
            for b in step.release:
                holder[b] = None
            for b in step.acquire:
                assert holder[b] is None  # the conditional UPDATE: only a free row is taken
                holder[b] = r
    assert all(h is not None for h in holder.values()), holder  # every backend watched
    counts = [sum(1 for h in holder.values() if h == r) for r in range(replicas)]
    assert max(counts, default=0) <= share


# ------------------------------------------------------------------------------------------ watchers rebalance


@pytest.fixture
def three_backends(db, kube_server):
    from configs import store
    from tests.clusters.conftest import CLI

    for name in ("sim-a", "sim-b", "sim-c"):
        store.apply("BACKEND", name, {"namespace": "default", "api_url": kube_server.url}, CLI)
    return list(Backend.objects.filter(name__startswith="sim-").order_by("name").values_list("pk", flat=True))


def _watcher(name: str) -> WorkflowWatcher:
    return WorkflowWatcher(watch_seconds=30, backoff_max=0.5, replica=name, lease_seconds=30, renew_seconds=1)


def _holders() -> dict[str, str]:
    return dict(WatcherLease.objects.filter(watcher="watch_workflows").values_list("backend__name", "holder"))


def test_a_replica_that_joins_takes_a_fair_share_and_the_first_releases_it(three_backends):
    first, second = _watcher("first"), _watcher("second")
    try:
        lines = first.start()
        assert [line.split(":")[0] for line in lines] == ["backend sim-a", "backend sim-b", "backend sim-c"]
        assert set(_holders().values()) == {"first"}
        assert second.start() == [
            "replica second: no backend free to take yet; looking every renewal"
        ]  # all held: it waits

        def balanced() -> bool:
            first.process(timeout=0.05)
            second.process(timeout=0.05)
            held = sorted(_holders().values())
            return held in (["first", "first", "second"], ["first", "second", "second"])

        wait_until(balanced, what="two replicas share three backends 2 + 1")
        assert {s.pk for s in first.backends}.isdisjoint({s.pk for s in second.backends})
        assert len(first.backends) + len(second.backends) == 3
        given_up = next(iter(set(three_backends) - set(first.held)))
        # an item the first replica queued for a backend it released is dropped, never applied
        stale = next(s for s in second.backends if s.pk == given_up)
        before = first.fenced
        first.events.put(("event", stale, "MODIFIED", {"metadata": {"name": "x", "resourceVersion": "1"}}))
        first.process(timeout=0.05)
        assert first.fenced == before + 1
    finally:
        first.stop()
        second.stop()
    assert set(_holders().values()) == {""}  # a clean stop frees every lease at once


# ------------------------------------------------------------------------------------------ seeing them


def test_the_watchers_command_says_which_replica_holds_which_backend():
    ids = backends(3)
    a = replica("pod-a")
    replica("pod-b")
    a.ensure(ids)
    held = a.acquire(ids[1])
    a.fence(held, {"nodes": "12", "pods": "34"})
    out = StringIO()
    call_command("watchers", "watch_cluster", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "watch_cluster: 2 live replica(s) (pod-a, pod-b); 1 of 3 backend(s) held"
    assert lines[1].split() == ["BACKEND", "REPLICA", "TOKEN", "EXPIRES", "VERSIONS"]
    assert lines[2].split() == ["b0", "-", "0", "free", "-"]
    assert lines[3].split()[:3] == ["b1", "pod-a", "1"] and lines[3].split()[-2:] == ["nodes=12", "pods=34"]
    assert "in " in lines[3]


def test_the_replica_probe_checks_its_own_beat_and_the_backends_it_holds(monkeypatch):
    ids = backends(2)
    a, other = replica("pod-a"), replica("pod-b")
    a.ensure(ids)
    mine, theirs = a.acquire(ids[0]), other.acquire(ids[1])
    assert mine and theirs
    found = replica_health("watch_cluster", "pod-a", 60)
    assert found.ok and found.lines == [
        "watch_cluster replica pod-a: ok, beat 0s ago",
        "watch_cluster b0: taken, first beat pending",
    ]
    beat("watch_cluster", [Beat(ids[0], 0.1, None, 3)])
    old = timezone.now() - timedelta(hours=1)
    WatcherHeartbeat.objects.create(watcher="watch_cluster", backend_id=ids[1], beat_at=old)  # pod-b's, stale
    assert replica_health("watch_cluster", "pod-a", 60).ok  # another replica's stale backend is not ours
    assert not replica_health("watch_cluster", "pod-b", 60).ok
    assert replica_health("watch_cluster", "pod-c", 60).lines == [
        "watch_cluster replica pod-c: not running (no replica row)"
    ]
    monkeypatch.setenv("WATCHER_REPLICA", "pod-a")
    out = StringIO()
    call_command("watcher_health", "watch_cluster", "--this-replica", stdout=out)
    assert out.getvalue().splitlines()[1].startswith("watch_cluster b0: ok, beat ")


def test_a_watcher_whose_lease_was_taken_writes_nothing_more_and_drops_the_backend(backend, kube_server):
    from clusters.inventory_watch import ClusterWatcher
    from tests.polling import drain_until

    watcher = ClusterWatcher(["sim"], watch_seconds=30, replica="old", lease_seconds=30, renew_seconds=10)
    try:
        watcher.start()
        kube_server.emulator.patch("nodes", "cpu-node-0", {"metadata": {"labels": {"seen": "1"}}})
        drain_until(watcher, lambda: Node.objects.get(name="cpu-node-0").labels.get("seen") == "1")
        # another replica takes the lease over (as after an expiry the old one did not notice: a paused VM)
        WatcherLease.objects.filter(backend=backend).update(expires_at=Now())
        thief = replica("new")
        taken = thief.acquire(backend.pk)
        assert taken is not None and taken.token == 2
        kube_server.emulator.patch("nodes", "cpu-node-0", {"metadata": {"labels": {"seen": "2"}}})
        wait_until(lambda: watcher.process(timeout=0.05) is not None and not watcher.held, what="the old one drops it")
        assert Node.objects.get(name="cpu-node-0").labels.get("seen") == "1"  # its write was refused
        assert watcher.fenced >= 1 and watcher.backends == []
        assert WatcherLease.objects.get(backend=backend).holder == "new"
    finally:
        watcher.stop()
    assert WatcherLease.objects.get(backend=backend).holder == "new"  # its stop does not free what it lost


def test_a_backend_moved_to_another_api_server_is_listed_afresh_there_not_resumed(backend, kube_server):
    """The recorded resourceVersions are the old cluster's: the config change forgets them, and the replica
    watching it lets it go and takes it again on the new server's settings."""
    from clusters.inventory_watch import ClusterWatcher
    from configs import store
    from kubesim import EmulatorServer
    from tests.clusters.conftest import CLI
    from tests.polling import drain_until

    watcher = ClusterWatcher(["sim"], watch_seconds=30, replica="one", lease_seconds=30, renew_seconds=1)
    with EmulatorServer(host="127.0.0.1", port=0, fleet="demo") as other:
        try:
            watcher.start()
            kube_server.emulator.patch("nodes", "cpu-node-0", {"metadata": {"labels": {"cluster": "first"}}})
            drain_until(watcher, lambda: Node.objects.get(name="cpu-node-0").labels.get("cluster") == "first")
            WatcherLease.objects.filter(backend=backend).update(versions={"nodes": "12345", "pods": "12345"})
            other.emulator.patch("nodes", "cpu-node-0", {"metadata": {"labels": {"cluster": "second"}}})

            store.apply("BACKEND", "sim", {"description": "moved", "namespace": "default", "api_url": other.url}, CLI)
            assert WatcherLease.objects.get(backend=backend).versions == {}  # nothing resumes from the old ones

            drain_until(watcher, lambda: Node.objects.get(name="cpu-node-0").labels.get("cluster") == "second")
            assert list(watcher.held) == [backend.pk] and watcher.held[backend.pk].token == 2  # let go, taken again
            kube_server.emulator.patch("nodes", "cpu-node-0", {"metadata": {"labels": {"cluster": "first-again"}}})
            other.emulator.patch("nodes", "cpu-node-1", {"metadata": {"labels": {"cluster": "second"}}})
            drain_until(watcher, lambda: Node.objects.get(name="cpu-node-1").labels.get("cluster") == "second")
            assert Node.objects.get(name="cpu-node-0").labels["cluster"] == "second"  # the old server is not watched
        finally:
            watcher.stop()


def test_a_change_that_keeps_the_server_keeps_the_recorded_versions(backend):
    from configs import store
    from tests.clusters.conftest import CLI

    WatcherLease.objects.create(watcher="watch_workflows", backend=backend, versions={"pods": "7"})
    store.apply("BACKEND", "sim", {**store.show("BACKEND", "sim"), "description": "renamed in words only"}, CLI)
    assert WatcherLease.objects.get(backend=backend).versions == {"pods": "7"}
