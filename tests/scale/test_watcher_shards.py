"""Watcher replicas share the backends, and one SIGKILLed mid-stream loses no event (docs/operations.md#watcher-shards).

Five simulated clusters (kubesim over HTTP, one server) behind five backends; three `manage.py watch_cluster`
and three `manage.py watch_workflows` processes (replicas r1, r2, r3 of each, lease 6 s, renewal every 2 s).
Once they share the backends (no replica above ceil(5 / 3) = 2), workflows run on every backend and node labels
change on every cluster; while that flows, the replica of each watcher holding two backends is SIGKILLed.
Then:

* its leases expire within the lease time of the kill (the database's clock) and the others take them, never
  before they expire (no two holders);
* the workflow replica that takes a backend over resumes from the resourceVersion the dead one recorded
  with its last write, as its log says;
* every event was applied once: every task COMPLETED with exactly one CREATED, SCHEDULED, RUNNING and
  EXITED event; every node, its labels and its pod counts in the inventory are the cluster's.
"""

from __future__ import annotations

import itertools
import random
import re
import threading
from collections import Counter
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection
from django.db.models.functions import Now

from clusters.models import Backend, Node, WatcherLease, WatcherReplica
from configs import store
from configs.revisions import Actor
from kubesim import EmulatorServer
from soak.portal import database_url
from soak.stack import Stack, environment
from tests.devstack import REPO, wait_until
from workflows.models import Task, TaskEvent, Workflow

pytestmark = [pytest.mark.scale, pytest.mark.django_db(transaction=True)]

CLUSTERS = [f"c{i}" for i in range(5)]
REPLICAS = ("r1", "r2", "r3")
WATCHERS = ("watch_cluster", "watch_workflows")
LEASE, RENEW = 6, 2  # seconds
WAVES, PER_WAVE, TASKS = 3, 2, 4  # per backend: 3 waves of 2 workflows of 4 tasks (120 tasks in all)
ACTOR = Actor(name="shards-test", source="cli")
INSTANCE = "test-portal"


@pytest.fixture
def clusters():
    kubelet = {"start_delay": 0.05, "run_seconds": 0.3}
    parts = {name: EmulatorServer(fleet="demo", kubelet=kubelet) for name in CLUSTERS}
    with EmulatorServer(host="127.0.0.1", port=0, clusters=parts):
        yield parts
        for part in parts.values():
            assert not part.emulator.internal_errors, list(part.emulator.internal_errors)


@pytest.fixture
def configured(transactional_db, clusters, settings):
    if connection.vendor != "postgresql":
        pytest.fail("the watcher processes reach the test database through DATABASE_URL: run with `make test`")
    from access.services import roles
    from pools.engine import default_templates
    from tests.factories import RoleFactory, UserFactory

    settings.PORTAL_INSTANCE = INSTANCE
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cpu = {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": "cpu"}}}
    store.apply_many("POD_TEMPLATE", {"default_user": default_templates()["default_user"], "cpu": cpu}, ACTOR)
    for name, part in clusters.items():
        store.apply("BACKEND", name, {"namespace": "wf-jobs", "api_url": part.url}, ACTOR)
        for node in part.emulator.list("nodes"):  # the label the portal's pods select (all in the Default)
            labels = {"pool-portal/node-pool": f"{name}-default"}
            part.emulator.patch("nodes", node["metadata"]["name"], {"metadata": {"labels": labels}})
        store.apply(
            "POOL",
            f"p{name}",
            {
                "backend": name,
                "default_platform": "cpu",
                "common_pod_template": ["default_user"],
                "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
                "platforms": {"cpu": {"override_pod_template": ["cpu"]}},
            },
            ACTOR,
        )
    RoleFactory(name="osmo-shards", policies=[{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/*"]}])
    user = UserFactory(username="researcher")
    roles.update_user_roles(user, add=["osmo-shards", "osmo-user"], actor=ACTOR)
    return user


@pytest.fixture
def replicas(configured, tmp_path):
    env = environment(database_url(connection.settings_dict), "", settings.SECRET_KEY, INSTANCE)
    env.update(WATCHER_LEASE_SECONDS=str(LEASE), WATCHER_LEASE_RENEW_SECONDS=str(RENEW), CELERY_BROKER_URL="")
    stack = Stack(env, tmp_path)
    manage = [str(REPO / "manage.py")]
    for watcher, replica in itertools.product(WATCHERS, REPLICAS):
        stack.start(
            f"{watcher}-{replica}", [_python(), *manage, watcher, "--replica", replica, "--watch-seconds", "20"]
        )
    try:
        yield stack
    finally:
        stack.stop()


def test_a_replica_killed_mid_stream_loses_its_backends_to_the_others_and_no_event(replicas, clusters, configured):
    for watcher in WATCHERS:
        wait_until(lambda w=watcher: _shared(w) or _died(replicas), what=f"{watcher}: 5 backends over 3 replicas")
    assert not _died(replicas), _logs(replicas)
    wait_until(lambda: Node.objects.count() == 29 * len(CLUSTERS), what="every cluster synced")

    flow = NodeChanges(clusters)
    flow.start()
    try:
        submitted = _submit_wave(configured, 0)
        wait_until(lambda: _events() >= TASKS * len(CLUSTERS), what="the first wave's events flow")
        victims = {watcher: _holding_two(watcher) for watcher in WATCHERS}
        submitted += _submit_wave(configured, 1)
        wait_until(lambda: _events() >= 2 * TASKS * PER_WAVE * len(CLUSTERS), what="the second wave flows")
        for watcher, victim in victims.items():
            replicas.kill(f"{watcher}-{victim}")  # SIGKILL: no release, the leases must expire
        killed_at = _db_now()
        recorded = {  # what the dead replica last wrote under each lease, and when it expires: final now
            watcher: {
                backend: (versions, expires_at)
                for backend, versions, expires_at in WatcherLease.objects.filter(
                    watcher=watcher, holder=victim
                ).values_list("backend__name", "versions", "expires_at")
            }
            for watcher, victim in victims.items()
        }
        assert all(len(leases) == 2 for leases in recorded.values()), recorded
        submitted += _submit_wave(configured, 2)  # while its backends wait for their leases to expire
        for watcher, victim in victims.items():
            wait_until(lambda w=watcher, v=victim: _taken_over(w, v), what=f"{watcher}: {victim}'s backends taken")
    finally:
        flow.stop()

    total = WAVES * PER_WAVE * TASKS * len(CLUSTERS)
    wait_until(lambda: Task.objects.filter(status="COMPLETED").count() == total, what="every task completes")
    wait_until(lambda: _inventory_is_the_clusters(clusters), what="the inventory matches every cluster")

    # nothing applied twice, nothing lost
    assert set(Workflow.objects.values_list("status", flat=True)) == {"COMPLETED"}
    assert len(submitted) == Workflow.objects.count()
    kinds = Counter(TaskEvent.objects.values_list("kind", flat=True))
    assert {k: kinds[k] for k in ("SUBMITTED", "CREATED", "SCHEDULED", "RUNNING", "EXITED")} == dict.fromkeys(
        ("SUBMITTED", "CREATED", "SCHEDULED", "RUNNING", "EXITED"), total
    )
    per_task = Counter(TaskEvent.objects.values_list("task_id", "kind"))
    assert [key for key, times in per_task.items() if times != 1] == []

    # the dead replicas' leases: expired within the lease time of the kill, taken only after they expired
    for watcher, victim in victims.items():
        for backend, (versions, expired_at) in recorded[watcher].items():
            assert expired_at <= killed_at + timedelta(seconds=LEASE), (watcher, backend, expired_at, killed_at)
            lease = WatcherLease.objects.get(watcher=watcher, backend__name=backend)
            assert lease.holder in set(REPLICAS) - {victim}
            assert lease.acquired_at >= expired_at  # never two holders: taken once the dead one's had expired
            history = _takeover(replicas, watcher, backend, victim)
            assert history, f"{watcher} {backend}: no replica logged taking it"
            if watcher == "watch_workflows" and versions.get("pods"):
                assert f"from resourceVersion {versions['pods']}" in history, (backend, versions, history)
    survivors = {name for name in replicas.processes if not any(name.endswith(v) for v in victims.values())}
    assert not {name: code for name, code in replicas.exited().items() if name in survivors}
    for name in survivors:
        assert "Traceback" not in replicas.log(name), replicas.log(name)[-3000:]
    print(f"\nwatcher shards: {total} tasks, {flow.changes} node changes; killed {victims}; {_summary()}")


# ------------------------------------------------------------------------------------------ the flow


class NodeChanges:
    """Node label changes on every cluster, one every few milliseconds, until stopped; each cluster also gets
    a node added and one removed midway."""

    def __init__(self, clusters: dict[str, EmulatorServer]) -> None:
        self.clusters, self.changes = clusters, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def _run(self) -> None:
        rng = random.Random(7)
        for step in itertools.count():
            if self._stop.wait(0.005):
                return
            name = CLUSTERS[step % len(CLUSTERS)]
            emulator = self.clusters[name].emulator
            if step == 500:  # a node joins each cluster, and one leaves
                for part in self.clusters.values():  # GPU nodes: no workflow pod (they select cpu nodes) runs there
                    node = part.emulator.get("nodes", "a100-node-0")
                    extra = {**node, "metadata": {"name": "a100-node-extra", "labels": node["metadata"]["labels"]}}
                    part.emulator.create("nodes", extra)
                    part.emulator.delete("nodes", "a100-node-1")
                continue
            nodes = [n["metadata"]["name"] for n in emulator.list("nodes")]
            emulator.patch("nodes", rng.choice(nodes), {"metadata": {"labels": {"shards-test/seq": str(step)}}})
            self.changes += 1


def _submit_wave(user, wave: int) -> list[str]:
    from workflows.services import SubmitRequest, submit

    ids = []
    for name in CLUSTERS:
        for index in range(PER_WAVE):
            document = {
                "version": 2,
                "workflow": {
                    "name": f"w{wave}-{name}-{index}",
                    "resources": {"default": {"cpu": 0.1, "memory": "64Mi", "storage": "64Mi"}},
                    "tasks": [
                        {"name": f"t{t}", "image": "busybox:1.36", "command": ["sh", "-c", "echo hi"]}
                        for t in range(TASKS)
                    ],
                },
            }
            ids.append(submit(SubmitRequest(pool=f"p{name}", spec=document, who=user)).workflow_id)
    return ids


# ------------------------------------------------------------------------------------------ what the database says


def _held(watcher: str) -> Counter:
    live = WatcherLease.objects.filter(watcher=watcher, expires_at__gt=Now()).exclude(holder="")
    return Counter(live.values_list("holder", flat=True))


def _shared(watcher: str) -> bool:
    held = _held(watcher)
    return sum(held.values()) == len(CLUSTERS) and max(held.values()) <= 2 and len(held) == len(REPLICAS)


def _holding_two(watcher: str) -> str:
    return next(holder for holder, count in _held(watcher).items() if count == 2)


def _taken_over(watcher: str, victim: str) -> bool:
    held = _held(watcher)
    return sum(held.values()) == len(CLUSTERS) and victim not in held


def _events() -> int:
    return TaskEvent.objects.exclude(kind="SUBMITTED").count()


def _db_now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT STATEMENT_TIMESTAMP()")
        return cursor.fetchone()[0]


def _inventory_is_the_clusters(clusters: dict[str, EmulatorServer]) -> bool:
    for name, part in clusters.items():
        running = Counter(
            p["spec"].get("nodeName")
            for p in part.emulator.list("pods")
            if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        )
        cluster = {n["metadata"]["name"]: (n["metadata"].get("labels") or {}) for n in part.emulator.list("nodes")}
        ours = {
            node.name: (node.labels, node.workload_pods + node.other_pods)
            for node in Node.objects.filter(backend=Backend.objects.get(name=name))
        }
        if set(ours) != set(cluster):
            return False
        if any(ours[n][0] != labels or ours[n][1] != running.get(n, 0) for n, labels in cluster.items()):
            return False
    return True


def _takeover(stack: Stack, watcher: str, backend: str, victim: str) -> str:
    """The log lines of the survivors about taking `backend` (and, for workflows, where they resumed)."""
    lines = []
    for replica in set(REPLICAS) - {victim}:
        for line in stack.log(f"{watcher}-{replica}").splitlines():
            if re.search(rf"took backend {backend} |backend {backend}: watching", line):
                lines.append(line)
    return "\n".join(lines)


def _summary() -> str:
    replicas = WatcherReplica.objects.filter(expires_at__gt=Now()).values_list("watcher", "name")
    return "; ".join(f"{w}: {', '.join(sorted(n for ww, n in replicas if ww == w))} live" for w in WATCHERS)


def _died(stack: Stack) -> dict[str, int]:
    return stack.exited()


def _logs(stack: Stack) -> str:
    return "; ".join(f"{name}: {stack.log(name)[-1500:]}" for name in stack.processes)


def _python() -> str:
    import sys

    return sys.executable
