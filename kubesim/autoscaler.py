"""The cloud and its autoscalers behind machine pools (see kubesim.machinepools for what a pool is):

* every pool keeps at least its floor (fixed ``replicas``, or autoscaling ``min_replicas``) of nodes; a new node
  registers NotReady and turns Ready ``boot_seconds`` later;
* scale up (the cluster autoscaler, or Karpenter): pods that stay Unschedulable for ``scale_up_seconds`` and would
  fit a node of a pool (requests vs the instance type, nodeSelector and affinity vs its labels, tolerations vs
  its taints: the scheduler's own predicates) make the first such pool add nodes, packed first fit, up to its
  max (Karpenter: up to ``spec.limits``); pools are tried by name, ROSA's before Karpenter's; the nodes of all
  pools together stay within the cluster cap (``emulator.ocm_max_nodes_per_cluster``, 500), Karpenter's too;
* scale down: a Ready node with no pods but DaemonSet ones for ``scale_down_seconds`` goes, down to the floor
  (Karpenter: unless ``spec.disruption.consolidateAfter: Never``); a pool's max lowered: the idle nodes first;
* Karpenter's consolidation of underutilized nodes (``consolidationPolicy: WhenEmptyOrUnderutilized``, its
  default): a node of the NodePool whose pods have not changed for ``scale_down_seconds`` and would all fit on
  the cluster's other Ready nodes (the scheduler's predicates, their free room) is deleted, one per pass, fewest
  pods first (Karpenter's single-node consolidation by deletion; kubesim never replaces it with a cheaper one);
* a pool deleted: its nodes are drained and go;
* a drain evicts through the Eviction API (kubesim.disruption), as the cluster autoscaler and Karpenter do: a
  node whose pods a PodDisruptionBudget does not let go is skipped (another is taken if one can go) and tried
  again on later passes; a node goes once its evicted pods have stopped (their preStop hooks, kubesim.kubelet);
* ``status.current_replicas`` of each OCM pool and ``status.resources`` of each NodePool follow the nodes;
* spot interruption (kubesim.spot), on request or, with ``spot_interruption_every`` (mean seconds between two),
  at random on the spot nodes of machine pools, as a demo.

Only nodes kubesim made for a pool (annotation POOL_ANNOTATION) are ever scaled down or drained. Everything runs
on the emulator's loop, every ``sync_seconds``. Enable with ``EmulatorServer(machine_pools=True | {options})``,
``server.enable_machine_pools(**options)`` or ``python -m kubesim --machine-pools``.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
import traceback

from .crds import KARPENTER_NODEPOOL
from .disruption import PDBS
from .emulator import KubeEmulator
from .machinepools import (
    APPLIED_ANNOTATION,
    NODEPOOLS,
    POOL_ANNOTATION,
    InstanceShape,
    PoolShape,
    applied_by_pool,
    applied_value,
    load_catalog,
    node_resources,
    nodepool_shape,
    ocm_pools,
    ready_condition,
)
from .ocm import MAX_NODES_PER_CLUSTER
from .resources import ResourceType
from .scheduling import NODES, PODS, NodeInfo, PodKey, Scheduler
from .spot import DRAIN_RETRY_SECONDS, SpotInterrupter, evict_all, is_spot

log = logging.getLogger("kubesim")


def _is_ready(node: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (node.get("status") or {}).get("conditions") or ()
    )


GONE, STOPPING, BLOCKED = "gone", "stopping", "blocked"  # what a drain did to a node
GOING_TAINT = {"key": "ToBeDeletedByClusterAutoscaler", "value": "", "effect": "NoSchedule"}
KARPENTER_GOING_TAINT = {"key": "karpenter.sh/disrupted", "value": "", "effect": "NoSchedule"}
GOING_TAINT_KEYS = (GOING_TAINT["key"], KARPENTER_GOING_TAINT["key"])


def _taint_key(taint: dict) -> tuple:
    return (taint.get("key"), taint.get("value") or "", taint.get("effect"))


def _is_daemon(pod: dict) -> bool:
    return any(ref.get("kind") == "DaemonSet" for ref in pod["metadata"].get("ownerReferences") or ())


def _unschedulable(pod: dict) -> bool:
    status = pod.get("status") or {}
    if status.get("phase", "Pending") != "Pending" or (pod.get("spec") or {}).get("nodeName"):
        return False
    return any(
        c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable"
        for c in status.get("conditions") or ()
    )


class _Slot:
    """Room on a node that is booting or about to be made, for the pending pods the autoscaler packs onto it."""

    def __init__(self, instance: InstanceShape, free: dict[str, float]) -> None:
        self.instance, self.free = instance, free

    def take(self, requests: dict[str, float]) -> bool:
        if any(amount > self.free.get(res, 0.0) + 1e-9 for res, amount in requests.items() if amount > 0):
            return False
        for res, amount in requests.items():
            self.free[res] = self.free.get(res, 0.0) - amount
        return True


class MachinePoolController:
    def __init__(
        self,
        emulator: KubeEmulator,
        *,
        boot_seconds: float = 20.0,
        scale_up_seconds: float = 5.0,
        scale_down_seconds: float = 120.0,
        sync_seconds: float = 0.5,
        spot_notice_seconds: float = 120.0,
        spot_interruption_every: float | None = None,
        drain_retry_seconds: float = DRAIN_RETRY_SECONDS,
        seed: int | None = None,
    ) -> None:
        self.emulator = emulator
        if getattr(emulator, "ocm_machine_pools", None) is None:  # kubesim.ocm's store, when that is not served
            emulator.ocm_machine_pools = {}
        self.boot_seconds, self.scale_up_seconds = boot_seconds, scale_up_seconds
        self.scale_down_seconds, self.sync_seconds = scale_down_seconds, sync_seconds
        self.spot_interruption_every = spot_interruption_every
        self.spot = SpotInterrupter(emulator, spot_notice_seconds, drain_retry_seconds)
        self.refused: dict[str, str] = {}  # pool key -> why kubesim makes no nodes for it (unknown instance type)
        self._random = random.Random(seed)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._ready_at: dict[str, float] = {}  # booting node -> when its kubelet is up (monotonic)
        self._pending_since: dict[str, float] = {}  # pod uid -> first seen Unschedulable
        self._idle_since: dict[str, float] = {}  # node -> since when it has had no pods
        self._settled_since: dict[str, float] = {}  # node -> since when its pods have not changed
        self._fruitless: dict[str, tuple] = {}  # pool -> (resourceVersion, candidates) when none could go
        # Pods indexed as they change (start() reads those already there), so a pass reads the few that matter,
        # not every pod: the Unschedulable ones, and per node its running pods but DaemonSet ones.
        self._waiting: dict[PodKey, dict] = {}
        self._pods_on: dict[str, set[PodKey]] = {}
        self._node_of: dict[PodKey, str] = {}
        if NODEPOOLS not in emulator._types:  # now, so that a state file's NodePools load
            emulator.run_in_loop(emulator._register, KARPENTER_NODEPOOL)

    # -- lifecycle (on the emulator's loop) ------------------------------------------------
    def start(self) -> None:
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self.emulator.add_listener(self._on_event)
        for key, pod in self.emulator._store[PODS].items():
            self._index(key, pod)
        self.spot.start()
        self._timer = self._loop.call_soon(self._tick)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self.emulator.remove_listener(self._on_event)
        self.spot.stop()
        self._loop = None

    def _on_event(self, etype: str, rt: ResourceType, old: dict | None, new: dict) -> None:
        if rt.key == PODS:
            key = (new["metadata"].get("namespace", ""), new["metadata"]["name"])
            self._index(key, None if etype == "DELETED" else new)

    def _index(self, key: PodKey, pod: dict | None) -> None:
        """Put the pod (None: deleted) in the waiting set or under its node, wherever it now belongs."""
        self._waiting.pop(key, None)
        was = node = self._node_of.pop(key, None)
        if node is not None:
            on_node = self._pods_on[node]
            on_node.discard(key)
            if not on_node:
                del self._pods_on[node]
        now = None
        if pod is not None and (node := (pod.get("spec") or {}).get("nodeName")):
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") and not _is_daemon(pod):
                self._node_of[key] = node
                self._pods_on.setdefault(node, set()).add(key)
                now = node
        elif pod is not None and _unschedulable(pod) and not pod["metadata"].get("deletionTimestamp"):
            self._waiting[key] = pod
        if was != now:  # a pod came or went: the nodes' pods are not settled (Karpenter's consolidateAfter)
            for changed in (was, now):
                if changed is not None:
                    self._settled_since[changed] = time.monotonic()

    def _tick(self) -> None:
        if self._loop is None:
            return
        try:
            self.sync()
        except Exception:  # keep the loop alive; tests assert on internal_errors
            log.exception("kubesim machine pools failed")
            self.emulator.internal_errors.append(traceback.format_exc())
        self._timer = self._loop.call_later(self.sync_seconds, self._tick)

    # -- one pass --------------------------------------------------------------------------
    def sync(self) -> None:
        now = time.monotonic()
        catalog = load_catalog()
        pools, refused = ocm_pools(self.emulator.ocm_machine_pools, catalog)
        for nodepool in self.emulator._store[NODEPOOLS].values():
            shape = nodepool_shape(nodepool, catalog)
            if shape.instance_types:
                pools.append(shape)
            else:
                refused.append((shape.key, "no instance type of its requirements is in the catalog"))
        self.refused = dict(refused)
        by_key = {pool.key: pool for pool in sorted(pools, key=lambda p: (p.karpenter, p.name))}
        nodes: dict[str, list[dict]] = {}
        for node in self.emulator._store[NODES].values():
            key = (node["metadata"].get("annotations") or {}).get(POOL_ANNOTATION)
            if key and key not in self.refused and node["metadata"]["name"] not in self.spot.interrupting:
                nodes.setdefault(key, []).append(node)
        pending, busy = self._pods(now)
        for key in set(nodes) - set(by_key):  # pool deleted: drain and delete its nodes (a budget may hold one)
            for node in nodes.pop(key):
                self._drain(node["metadata"]["name"])
        self._scale_up(by_key, nodes, pending)
        for pool in by_key.values():
            self._follow_changes(pool, nodes.setdefault(pool.key, []))
            self._keep_bounds(pool, nodes[pool.key], busy, now)
            if pool.karpenter and pool.scale_down and pool.consolidate_underutilized:
                self._consolidate(pool.key, nodes[pool.key], now)
            self._write_status(pool, nodes[pool.key])
        self._boot(now)
        self._interrupt_at_random()

    def _pods(self, now: float) -> tuple[list[dict], set[str]]:
        """Pods Unschedulable for long enough (oldest first), and the nodes running non-DaemonSet pods."""
        pending, seen = [], {}
        for pod in self._waiting.values():
            uid = pod["metadata"]["uid"]
            seen[uid] = self._pending_since.get(uid, now)
            if now - seen[uid] >= self.scale_up_seconds:
                pending.append(pod)
        self._pending_since = seen
        pending.sort(key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
        return pending, set(self._pods_on)

    # -- scale up --------------------------------------------------------------------------
    def _scale_up(self, pools: dict[str, PoolShape], nodes: dict[str, list[dict]], pending: list[dict]) -> None:
        if not pending or not pools:
            return
        judge = Scheduler(self.emulator)  # the scheduler's predicates against each pool's node shape
        templates = {
            (pool.key, inst.name): NodeInfo(pool.node(inst, f"{pool.name}-template", True))
            for pool in pools.values()
            for inst in pool.instance_types
        }
        slots: dict[str, list[_Slot]] = {}
        for pool in pools.values():  # booting nodes take the pods first: they will be Ready soon
            by_name = {i.name: i for i in pool.instance_types}
            slots[pool.key] = [
                _Slot(by_name.get(self._instance_of(n), pool.instance_types[0]), node_resources(n))
                for n in nodes.get(pool.key, ())
                if not _is_ready(n) and pool.instance_types
            ]
        added: dict[str, list[_Slot]] = {key: [] for key in pools}
        for pod in pending:
            requests = {**judge.requests(pod), "pods": 1.0}
            for pool in pools.values():
                fitting = [i for i in pool.instance_types if judge.misfit(pod, templates[pool.key, i.name]) is None]
                if not fitting:
                    continue
                if any(slot.take(requests) for slot in slots[pool.key]):
                    break
                existing = nodes.get(pool.key, [])
                if not self._room(pool, existing, added[pool.key], fitting[0]):
                    continue
                if not self._cluster_room(nodes, added):
                    continue  # the cloud refuses more nodes for this cluster: the pod stays Pending
                slot = _Slot(fitting[0], node_resources({"status": {"capacity": fitting[0].capacity(pool.disk_gib)}}))
                slot.take(requests)
                slots[pool.key].append(slot)
                added[pool.key].append(slot)
                break
        for key, new in added.items():
            for slot in new:
                nodes.setdefault(key, []).append(self._add_node(pools[key], slot.instance))

    @staticmethod
    def _instance_of(node: dict) -> str:
        return (node["metadata"].get("labels") or {}).get("node.kubernetes.io/instance-type", "")

    def _cluster_room(self, nodes: dict[str, list[dict]], added: dict[str, list[_Slot]]) -> bool:
        """Whether the cluster may have one more machine-pool node: OCM's per-cluster cap (kubesim.ocm) bounds
        the nodes of every pool, Karpenter's too, as the cloud's quota bounds a real Karpenter's launches."""
        cap = getattr(self.emulator, "ocm_max_nodes_per_cluster", MAX_NODES_PER_CLUSTER)
        made = sum(len(pool_nodes) for pool_nodes in nodes.values()) + sum(len(new) for new in added.values())
        return made + 1 <= cap

    @staticmethod
    def _room(pool: PoolShape, existing: list[dict], added: list[_Slot], instance: InstanceShape) -> bool:
        """Whether one more node of ``instance`` stays within the pool's max (and a NodePool's limits)."""
        if len(existing) + len(added) + 1 > pool.most:
            return False
        if not pool.limits:
            return True
        total: dict[str, float] = {}
        shapes = [node_resources(n) for n in existing]
        shapes += [node_resources({"status": {"capacity": s.instance.capacity(pool.disk_gib)}}) for s in added]
        shapes.append(node_resources({"status": {"capacity": instance.capacity(pool.disk_gib)}}))
        for shape in shapes:
            for res, amount in shape.items():
                total[res] = total.get(res, 0.0) + amount
        return all(total.get(res, 0.0) <= limit + 1e-9 for res, limit in pool.limits.items() if res != "nodes")

    def _add_node(self, pool: PoolShape, instance: InstanceShape) -> dict:
        taken = {name for _, name in self.emulator._store[NODES]}
        name = pool.new_node_name(self._random, taken)
        ready = self.boot_seconds <= 0
        node = self.emulator._create(self.emulator._types[NODES], None, pool.node(instance, name, ready))
        if not ready:
            self._ready_at[name] = time.monotonic() + self.boot_seconds
        return node

    # -- a pool's labels and taints changed ------------------------------------------------------
    def _follow_changes(self, pool: PoolShape, nodes: list[dict]) -> None:
        """The pool's labels or taints changed since its nodes were made. ROSA (OCM) applies the new labels and
        taints to the machine pool's existing nodes, in place (what it set before and no longer asks goes; other
        labels and taints stay). Karpenter sees the nodes drifted from their NodePool's template and replaces
        them: each is drained (budgets respected) and goes; pods that wait get nodes of the new template."""
        for node in list(nodes):
            applied = applied_by_pool(node, pool)
            if applied == {"labels": pool.labels, "taints": pool.taints}:
                continue
            if pool.karpenter:
                if self._drain(node["metadata"]["name"]) == GONE:
                    nodes.remove(node)
                continue
            meta, spec = node["metadata"], dict(node.get("spec") or {})
            labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in applied["labels"]}
            labels.update(pool.labels)
            given = {_taint_key(t) for t in applied["taints"]}
            kept = [t for t in spec.get("taints") or () if _taint_key(t) not in given]
            spec["taints"] = [*kept, *(dict(t) for t in pool.taints)]
            if not spec["taints"]:
                spec.pop("taints")
            annotations = {**(meta.get("annotations") or {}), APPLIED_ANNOTATION: applied_value(pool)}
            changed = {**node, "metadata": {**meta, "labels": labels, "annotations": annotations}, "spec": spec}
            nodes[nodes.index(node)] = self.emulator._commit(self.emulator._types[NODES], node, changed, None)

    # -- floor, max, idle ------------------------------------------------------------------
    def _keep_bounds(self, pool: PoolShape, nodes: list[dict], busy: set[str], now: float) -> None:
        while len(nodes) < pool.fewest and pool.instance_types:
            nodes.append(self._add_node(pool, pool.instance_types[0]))
        names = [n["metadata"]["name"] for n in nodes]
        for name in names:
            if name in busy or name in self._ready_at:
                self._idle_since.pop(name, None)
            else:
                self._idle_since.setdefault(name, now)
        # Idle nodes go first (longest idle first), then the newest.
        order = sorted(names, key=lambda n: (n not in self._idle_since, self._idle_since.get(n, 0.0), n))
        excess = max(0, len(nodes) - int(min(pool.most, len(nodes))))
        going = []
        for name in order:  # a node a budget holds is skipped: the next one goes in its place
            if len(going) >= excess:
                break
            if self._drain(name) != BLOCKED:
                going.append(name)
        keep = [name for name in order if name not in going]
        if not pool.scale_down:
            return
        can_go = len(keep) - pool.fewest
        for name in keep:
            if can_go <= 0:
                break
            since = self._idle_since.get(name)
            if since is not None and now - since >= self.scale_down_seconds and self._drain(name) != BLOCKED:
                can_go -= 1
        nodes[:] = [n for n in nodes if ("", n["metadata"]["name"]) in self.emulator._store[NODES]]

    def _consolidate(self, pool: str, nodes: list[dict], now: float) -> None:
        """Karpenter's single-node consolidation by deletion: a Ready node of the NodePool, its pods settled for
        ``scale_down_seconds``, goes when every one of its pods would fit on another Ready node of the cluster
        (one that is not going or being interrupted), packed first fit in node-name order against what already
        runs there. A node a PodDisruptionBudget holds is not a candidate (``_drainable``: Karpenter leaves a node
        with pods it cannot evict and tries again later); it is drained through the Eviction API as any other."""
        names = {n["metadata"]["name"] for n in nodes}
        going = [name for name in sorted(names) if self._is_going(name)]
        if going:  # one at a time: finish the one under way first
            if self._drain(going[0]) == GONE:
                nodes[:] = [n for n in nodes if n["metadata"]["name"] != going[0]]
            return
        candidates = sorted(
            (
                name
                for name in names
                if name in self._pods_on
                and name not in self._ready_at
                and now - self._settled_since.get(name, now) >= self.scale_down_seconds
                and self._drainable(name)
            ),
            key=lambda name: (len(self._pods_on[name]), name),
        )
        seen = (self.emulator.resource_version, tuple(candidates))
        if not candidates or self._fruitless.get(pool) == seen:  # nothing changed since none could go
            return
        self._fruitless[pool] = seen
        judge = Scheduler(self.emulator)  # what runs on every node now, for the room the others have left
        for key, pod in self.emulator._store[PODS].items():
            judge.account(key, pod)
        store = self.emulator._store[NODES]
        for name in candidates:
            others = [
                NodeInfo(node)
                for (_, other), node in sorted(store.items())
                if other != name and other not in self.spot.interrupting
            ]
            placed: list[PodKey] = []
            fits = True
            for key in sorted(self._pods_on[name]):
                pod = self.emulator._store[PODS].get(key)
                if pod is None or pod["metadata"].get("deletionTimestamp"):
                    continue
                target = next((info for info in others if judge.misfit(pod, info) is None), None)
                if target is None:
                    fits = False
                    break
                moved = ("kubesim/consolidation", f"{key[0]}/{key[1]}")
                judge.account(moved, {**pod, "spec": {**(pod.get("spec") or {}), "nodeName": target.name}})
                placed.append(moved)
            if fits:
                if self._drain(name) == GONE:
                    nodes[:] = [n for n in nodes if n["metadata"]["name"] != name]
                return
            for moved in placed:
                judge.account(moved, None)

    def _is_going(self, name: str) -> bool:
        node = self.emulator._store[NODES].get(("", name)) or {}
        return any(t.get("key") in GOING_TAINT_KEYS for t in (node.get("spec") or {}).get("taints") or ())

    def _drain(self, name: str) -> str:
        """Evict the node's pods through the Eviction API and delete the node once they are gone: GONE; STOPPING
        while evicted pods run their preStop hooks (the node goes on a later pass); BLOCKED when a budget keeps
        a pod (nothing is evicted unless every pod may go, as the cluster autoscaler checks first)."""
        if not self._drainable(name):
            return BLOCKED
        left, refused = evict_all(self.emulator, name)
        if refused:
            return BLOCKED
        if left:
            self._taint_going(name)
            return STOPPING
        if ("", name) in self.emulator._store[NODES]:
            self.emulator._delete(self.emulator._types[NODES], None, name, None)
        self._ready_at.pop(name, None)
        self._idle_since.pop(name, None)
        self._settled_since.pop(name, None)
        return GONE

    def _drainable(self, name: str) -> bool:
        """Whether every budget of the node's running pods allows as many disruptions as it has pods there."""
        wanted: dict[tuple[str, str], int] = {}
        budgets = self.emulator.disruption
        for namespace, pod_name in self._pods_on.get(name, ()):
            pod = self.emulator._store[PODS].get((namespace, pod_name))
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                continue
            for pdb in budgets.budgets(namespace):
                if budgets._matches(pdb, pod):
                    key = (namespace, pdb["metadata"]["name"])
                    wanted[key] = wanted.get(key, 0) + 1
        for (namespace, pdb_name), count in wanted.items():
            pdb = self.emulator._store[PDBS].get((namespace, pdb_name)) or {}
            if int((pdb.get("status") or {}).get("disruptionsAllowed") or 0) < count:
                return False
        return True

    def _taint_going(self, name: str) -> None:
        """While its evicted pods stop, no new pod lands on a node that is going (the cluster autoscaler's taint;
        Karpenter's is karpenter.sh/disrupted)."""
        node = self.emulator._store[NODES].get(("", name))
        if node is None or self._is_going(name):
            return
        karpenter = str((node["metadata"].get("annotations") or {}).get(POOL_ANNOTATION)).startswith("karpenter/")
        spec = dict(node.get("spec") or {})
        spec["taints"] = [*(spec.get("taints") or ()), dict(KARPENTER_GOING_TAINT if karpenter else GOING_TAINT)]
        self.emulator._commit(self.emulator._types[NODES], node, {**node, "spec": spec}, None)

    def _boot(self, now: float) -> None:
        """Booting nodes whose kubelet is up turn Ready (after the scale-up pass, so that the kubelet binds the
        pods they were made for before the next pass looks at pending pods again)."""
        for name, at in list(self._ready_at.items()):
            if now < at:
                continue
            del self._ready_at[name]
            node = self.emulator._store[NODES].get(("", name))
            if node is None:
                continue
            status = dict(node.get("status") or {})
            others = [c for c in status.get("conditions") or () if c.get("type") != "Ready"]
            status["conditions"] = [*others, ready_condition(True)]
            self.emulator._commit(self.emulator._types[NODES], node, {**node, "status": status}, "status")
        for node in list(self.emulator._store[NODES].values()):  # restored from a state file mid-boot
            name = node["metadata"]["name"]
            managed = POOL_ANNOTATION in (node["metadata"].get("annotations") or {})
            if managed and name not in self._ready_at and not _is_ready(node):
                self._ready_at[name] = now + self.boot_seconds

    # -- status ----------------------------------------------------------------------------
    def _write_status(self, pool: PoolShape, nodes: list[dict]) -> None:
        if pool.ocm is not None:
            status = pool.ocm.setdefault("status", {})
            if status.get("current_replicas") != len(nodes):
                status["current_replicas"] = len(nodes)
            return
        rt = self.emulator._types[NODEPOOLS]
        current = self.emulator._store[NODEPOOLS].get(("", pool.name))
        if current is None:
            return
        total: dict[str, float] = {}
        for node in nodes:
            for res, amount in node_resources(node).items():
                if res in ("cpu", "memory", "nvidia.com/gpu", "ephemeral-storage", "pods"):
                    total[res] = total.get(res, 0.0) + amount
        resources = {res: f"{int(amount)}" for res, amount in sorted(total.items())}
        resources["nodes"] = str(len(nodes))
        status = {**(current.get("status") or {}), "resources": resources}
        if status != current.get("status"):
            self.emulator._commit(rt, current, {**current, "status": status}, "status")

    # -- spot ------------------------------------------------------------------------------
    def _interrupt_at_random(self) -> None:
        every = self.spot_interruption_every
        if not every or self._random.random() >= self.sync_seconds / every:
            return
        spot = sorted(
            node["metadata"]["name"]
            for node in self.emulator._store[NODES].values()
            if POOL_ANNOTATION in (node["metadata"].get("annotations") or {})
            and is_spot(node)
            and _is_ready(node)
            and node["metadata"]["name"] not in self.spot.interrupting
        )
        if spot:
            self.spot._interrupt(self._random.choice(spot))
