"""NoExecute taints, as kube-controller-manager's taint eviction controller has them: a pod bound to a node with
a NoExecute taint it does not tolerate is deleted at once; one that tolerates every such taint is deleted after
the least ``tolerationSeconds`` of the tolerations it uses (counted from when the controller saw the taint), or
never when none of them sets it; a taint removed in time keeps the pod. NoSchedule and PreferNoSchedule taints
never evict. A deleted pod gets the condition ``DisruptionTarget`` (reason ``DeletionByTaintManager``) and goes
through graceful termination (kubesim.kubelet: its preStop hook, its grace period).

Started by the simulated kubelet (kubesim.kubelet), on the emulator's loop; times are the loop's (real seconds).
"""

from __future__ import annotations

import asyncio
import logging
import traceback
from typing import TYPE_CHECKING

from .resources import ResourceType
from .scheduling import NODES, PODS, PodKey, tolerates

if TYPE_CHECKING:
    from .emulator import KubeEmulator

log = logging.getLogger("kubesim")
DELETED_REASON = "DeletionByTaintManager"
DELETED_MESSAGE = "Taint manager: deleting due to NoExecute taint"


def no_execute_taints(node: dict | None) -> list[dict]:
    return [t for t in ((node or {}).get("spec") or {}).get("taints") or () if t.get("effect") == "NoExecute"]


def eviction_delay(tolerations: list[dict], taints: list[dict]) -> float | None:
    """Seconds before a pod with ``tolerations`` is evicted from a node with these NoExecute ``taints``: 0 at
    once, None never. As the controller: the first toleration matching each taint is used; the least
    ``tolerationSeconds`` among those used counts (one at 0 or below: at once); none set: never."""
    used = []
    for taint in taints:
        toleration = next((t for t in tolerations or () if tolerates([t], taint)), None)
        if toleration is None:
            return 0.0
        used.append(toleration)
    seconds = [float(t["tolerationSeconds"]) for t in used if t.get("tolerationSeconds") is not None]
    if not seconds:
        return None
    return max(0.0, min(seconds))


class TaintEviction:
    def __init__(self, emulator: KubeEmulator) -> None:
        self.emulator = emulator
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timers: dict[PodKey, asyncio.TimerHandle] = {}

    def start(self) -> None:
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self.emulator.add_listener(self._on_event)
        for node in list(self.emulator._store[NODES].values()):
            if no_execute_taints(node):
                self._loop.call_soon(self._check_node, node["metadata"]["name"])

    def stop(self) -> None:
        self.emulator.remove_listener(self._on_event)
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._loop = None

    @property
    def scheduled(self) -> set[PodKey]:
        """Pods to be evicted when their tolerationSeconds run out."""
        return set(self._timers)

    # -- events (checked soon after, never inside the write that is being announced) ---------------------
    def _on_event(self, etype: str, rt: ResourceType, old: dict | None, new: dict) -> None:
        if self._loop is None:
            return
        if rt.key == NODES:
            if etype != "DELETED" and no_execute_taints(old) != no_execute_taints(new):
                self._loop.call_soon(self._guarded, self._check_node, new["metadata"]["name"])
        elif rt.key == PODS:
            key = (new["metadata"].get("namespace", ""), new["metadata"]["name"])
            if etype == "DELETED":
                self._cancel(key)
            elif (new.get("spec") or {}).get("nodeName"):
                node = self.emulator._store[NODES].get(("", new["spec"]["nodeName"]))
                if no_execute_taints(node) or key in self._timers:
                    self._loop.call_soon(self._guarded, self._check_pod, key)

    def _guarded(self, fn, *args) -> None:
        try:
            fn(*args)
        except Exception:  # keep the loop alive; tests assert on internal_errors
            log.exception("kubesim: NoExecute eviction failed")
            self.emulator.internal_errors.append(traceback.format_exc())

    def _check_node(self, name: str) -> None:
        for key, pod in list(self.emulator._store[PODS].items()):
            if (pod.get("spec") or {}).get("nodeName") == name:
                self._check_pod(key)

    def _check_pod(self, key: PodKey) -> None:
        pod = self.emulator._store[PODS].get(key)
        if (
            pod is None
            or pod["metadata"].get("deletionTimestamp")
            or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        ):
            self._cancel(key)
            return
        node = self.emulator._store[NODES].get(("", (pod.get("spec") or {}).get("nodeName") or ""))
        taints = no_execute_taints(node)
        delay = eviction_delay((pod.get("spec") or {}).get("tolerations") or [], taints) if taints else None
        if delay is None:
            self._cancel(key)
        elif delay <= 0:
            self._cancel(key)
            self._evict(key, pod["metadata"]["uid"])
        elif key not in self._timers and self._loop is not None:
            self._timers[key] = self._loop.call_later(delay, self._guarded, self._evict, key, pod["metadata"]["uid"])

    def _cancel(self, key: PodKey) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    def _evict(self, key: PodKey, uid: str) -> None:
        """Delete the pod as the controller does: DisruptionTarget first, then a graceful delete."""
        from .kubelet import Kubelet

        self._timers.pop(key, None)
        pod = self.emulator._store[PODS].get(key)
        if pod is None or pod["metadata"]["uid"] != uid or pod["metadata"].get("deletionTimestamp"):
            return
        rt = self.emulator._types[PODS]
        status = dict(pod.get("status") or {})
        status["conditions"] = Kubelet._set_condition(
            status, "DisruptionTarget", "True", DELETED_REASON, DELETED_MESSAGE
        )
        self.emulator._commit(rt, pod, {**pod, "status": status}, "status")
        self.emulator._delete(rt, key[0], key[1], None)
