"""Spot interruption, as AWS, its node termination handler and the kubelet do it:

1. now: the node gets the taint ``aws-node-termination-handler/spot-itn=true:NoSchedule`` and the annotation
   ``pool-portal.dev/spot-interruption-at: <ISO time the node goes>``, and is drained: each of its pods (but
   DaemonSet ones) is evicted through the Eviction API (kubesim.disruption), so PodDisruptionBudgets are
   respected and each pod's preStop hook runs within its grace period (kubesim.kubelet); an eviction a budget
   refuses is tried again every ``drain_retry_seconds``, as ``kubectl drain``, AWS's node termination handler,
   Karpenter's interruption handling and OpenShift's machine controller all drain;
2. after the notice period (120 s on AWS; ``notice_seconds`` here, small in tests) the instance is gone whatever
   the budgets say: every pod still on the node fails (phase Failed, reason Terminated, the kubelet's shutdown
   message, condition DisruptionTarget with reason TerminationByKubelet, containers terminated with exit code
   143), one still stopping is removed;
3. the node is deleted.

Start one with :meth:`SpotInterrupter.interrupt` (``EmulatorServer.interrupt_spot``), or through the Kubernetes
API: annotate the node ``kubesim/interrupt-spot=now`` (``kubectl annotate node NAME kubesim/interrupt-spot=now``).
Only spot nodes (capacity type ``spot``) can be interrupted.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import traceback

from .emulator import KubeEmulator
from .kubelet import Kubelet
from .resources import ApiError, ResourceType
from .scheduling import NODES, PODS
from .store import now_rfc3339

log = logging.getLogger("kubesim")

SPOT_INTERRUPTION_TAINT = {"key": "aws-node-termination-handler/spot-itn", "value": "true", "effect": "NoSchedule"}
INTERRUPTION_AT_ANNOTATION = "pool-portal.dev/spot-interruption-at"
REQUEST_ANNOTATION = "kubesim/interrupt-spot"  # a test or a person asks kubesim to interrupt this node
SPOT_NOTICE_SECONDS = 120.0
TERMINATED_MESSAGE = "Pod was terminated in response to imminent node shutdown (spot interruption)."
SIGTERM_EXIT_CODE = 143
DRAIN_RETRY_SECONDS = 5.0  # kubectl drain's wait before it asks again for an eviction a budget refused
CAPACITY_TYPE_LABELS = ("node.kubernetes.io/capacity-type", "karpenter.sh/capacity-type")


def is_daemon(pod: dict) -> bool:
    return any(ref.get("kind") == "DaemonSet" for ref in pod["metadata"].get("ownerReferences") or ())


def evict_all(emulator: KubeEmulator, node_name: str) -> tuple[int, int]:
    """Evict every pod of the node (but DaemonSet ones and finished ones) through the Eviction API, as a drain
    does: (pods still on the node, of which refused by a budget). Pods being deleted count as still there."""
    left = refused = 0
    for pod in [p for p in emulator._store[PODS].values() if (p.get("spec") or {}).get("nodeName") == node_name]:
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") or is_daemon(pod):
            continue
        meta = pod["metadata"]
        if not meta.get("deletionTimestamp"):
            try:
                emulator.disruption.evict(meta.get("namespace", ""), meta["name"], None)
            except ApiError as error:
                if error.code != 429:
                    raise
                refused += 1
        if (meta.get("namespace", ""), meta["name"]) in emulator._store[PODS]:
            left += 1
    return left, refused


def is_spot(node: dict) -> bool:
    labels = node["metadata"].get("labels") or {}
    return any(labels.get(key) == "spot" for key in CAPACITY_TYPE_LABELS)


class SpotInterrupter:
    """Runs on the emulator's loop; ``interrupt`` may be called from any thread."""

    def __init__(
        self,
        emulator: KubeEmulator,
        notice_seconds: float = SPOT_NOTICE_SECONDS,
        drain_retry_seconds: float = DRAIN_RETRY_SECONDS,
    ) -> None:
        self.emulator = emulator
        self.notice_seconds = notice_seconds
        self.drain_retry_seconds = drain_retry_seconds
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timers: dict[str, asyncio.TimerHandle] = {}

    def start(self) -> None:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
            self.emulator.add_listener(self._on_event)
            for node in list(self.emulator._store[NODES].values()):
                self._on_event("ADDED", self.emulator._types[NODES], None, node)

    def stop(self) -> None:
        self.emulator.remove_listener(self._on_event)
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._loop = None

    @property
    def interrupting(self) -> set[str]:
        return set(self._timers)

    def interrupt(self, node_name: str) -> str:
        """Give ``node_name`` its termination notice; returns the ISO time it goes. ValueError: no such node,
        or not a spot node."""
        return self.emulator.run_in_loop(self._interrupt, node_name)

    # -- on the loop -----------------------------------------------------------------------
    def _on_event(self, etype: str, rt: ResourceType, old: dict | None, new: dict) -> None:
        if rt.key != NODES or etype == "DELETED" or self._loop is None:
            return
        name = new["metadata"]["name"]
        if (new["metadata"].get("annotations") or {}).get(REQUEST_ANNOTATION) and name not in self._timers:
            self._loop.call_soon(self._requested, name)  # not inside another write's listeners

    def _requested(self, name: str) -> None:
        try:
            self._interrupt(name)
        except ValueError as error:  # asked through the API: say why in the log, nothing to answer
            log.warning("kubesim: %s", error)

    def _interrupt(self, name: str) -> str:
        node = self.emulator._store[NODES].get(("", name))
        if node is None:
            raise ValueError(f"no node named {name!r}")
        if not is_spot(node):
            raise ValueError(f"node {name!r} is not a spot node (capacity type is not 'spot')")
        annotations = dict(node["metadata"].get("annotations") or {})
        if name in self._timers:
            return annotations[INTERRUPTION_AT_ANNOTATION]
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        goes = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=self.notice_seconds)
        goes_at = goes.isoformat(timespec="seconds").replace("+00:00", "Z")
        annotations[INTERRUPTION_AT_ANNOTATION] = goes_at
        annotations.pop(REQUEST_ANNOTATION, None)
        spec = dict(node.get("spec") or {})
        taints = [t for t in spec.get("taints") or () if t.get("key") != SPOT_INTERRUPTION_TAINT["key"]]
        spec["taints"] = [*taints, dict(SPOT_INTERRUPTION_TAINT)]
        changed = {**node, "metadata": {**node["metadata"], "annotations": annotations}, "spec": spec}
        self._timers[name] = self._loop.call_later(self.notice_seconds, self._reclaim, name)
        self.emulator._commit(self.emulator._types[NODES], node, changed, None)
        self._loop.call_soon(self._drain, name)
        return goes_at

    def _drain(self, name: str) -> None:
        """Evict the node's pods; again later while a budget refuses some and the node has not gone yet."""
        if name not in self._timers or self._loop is None:
            return
        try:
            _, refused = evict_all(self.emulator, name)
        except Exception:  # keep the loop alive; tests assert on internal_errors
            log.exception("kubesim: draining %s failed", name)
            self.emulator.internal_errors.append(traceback.format_exc())
            return
        if refused:
            self._loop.call_later(self.drain_retry_seconds, self._drain, name)

    def _reclaim(self, name: str) -> None:
        self._timers.pop(name, None)
        try:
            for pod in [
                p for p in self.emulator._store[PODS].values() if (p.get("spec") or {}).get("nodeName") == name
            ]:
                key = (pod["metadata"].get("namespace", ""), pod["metadata"]["name"])
                if pod["metadata"].get("deletionTimestamp"):  # still stopping: gone with its machine
                    self.emulator._remove(self.emulator._types[PODS], key)
                elif (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                    self._terminate(pod)
            if ("", name) in self.emulator._store[NODES]:
                self.emulator._delete(self.emulator._types[NODES], None, name, None)
        except Exception:  # keep the loop alive; tests assert on internal_errors
            log.exception("kubesim: spot interruption of %s failed", name)
            self.emulator.internal_errors.append(traceback.format_exc())

    def _terminate(self, pod: dict) -> None:
        now = now_rfc3339()
        status = dict(pod.get("status") or {})
        status["conditions"] = Kubelet._set_condition(
            status, "DisruptionTarget", "True", "TerminationByKubelet", TERMINATED_MESSAGE
        )
        for ctype in ("ContainersReady", "Ready"):
            status["conditions"] = Kubelet._set_condition(status, ctype, "False", "PodFailed")
        started = {
            c.get("name"): ((c.get("state") or {}).get("running") or {}).get("startedAt")
            for c in status.get("containerStatuses") or ()
        }
        meta, spec = pod["metadata"], pod.get("spec") or {}
        status["containerStatuses"] = [
            Kubelet._container_status(
                meta,
                container,
                False,
                {
                    "terminated": {
                        "exitCode": SIGTERM_EXIT_CODE,
                        "reason": "Error",
                        "startedAt": started.get(container.get("name")) or now,
                        "finishedAt": now,
                    }
                },
            )
            for container in spec.get("containers") or ()
        ]
        status.update({"phase": "Failed", "reason": "Terminated", "message": TERMINATED_MESSAGE})
        self.emulator._commit(self.emulator._types[PODS], pod, {**pod, "status": status}, "status")
