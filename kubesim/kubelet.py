"""A simulated scheduler + kubelet that runs inside the emulator's event loop.

* Pods without ``spec.nodeName`` (and with the default scheduler) are bound by
  :class:`kubesim.scheduling.Scheduler`: first fitting node by name (Ready, not cordoned,
  ``nodeSelector`` and required node affinity, NoSchedule/NoExecute taints tolerated, room for
  cpu, memory, pods and extended resources such as ``nvidia.com/gpu``). No fit: the pod stays
  Pending with ``PodScheduled=False``, reason ``Unschedulable`` and a scheduler-like message; it
  is retried when nodes change or capacity is freed.
* Bound Pending pods become Running after ``start_delay`` seconds, then end after ``run_seconds``
  with the exit code of the containers' own commands (kubesim.commands: ``exit 3``, ``false``; 0 for a
  command the simulation does not run): Succeeded for 0, Failed otherwise. Pod annotations override this:

  - ``kubesim/exit-code: "3"``   -> ends Failed with that exit code;
  - ``kubesim/run-seconds: "0.5"`` -> run time;  ``kubesim/start-seconds`` -> start delay;
  - ``kubesim/never-finish: "true"`` -> stays Running;
  - ``kubesim/exit-reason: "OOMKilled"`` (and ``kubesim/exit-message``) -> the terminated state's reason
    and message instead of Completed/Error.

* An image of a private registry (``private_registries``, default ``nvcr.io``) is pulled only with a matching
  ``imagePullSecrets`` entry: without one the pod waits ErrImagePull / ImagePullBackOff (kubesim.registries).

* Graceful termination: a Running pod deleted (through the API, an eviction, a NoExecute taint) whose container
  has a ``preStop`` exec hook goes Terminating (``deletionTimestamp`` = now + its grace period,
  ``deletionGracePeriodSeconds``: the DeleteOptions' ``gracePeriodSeconds``, else the pod's
  ``terminationGracePeriodSeconds``); the hook runs (its output joins the container's log, kubesim.podlogs) for
  as long as its ``sleep``s take, within the grace period; then the container is stopped and the pod removed. A
  container without a hook stops at SIGTERM at once, so such a pod goes at once, as before; grace 0 forces it.
  The pod keeps its phase until it is removed (kubelets before 1.27 did not mark it Failed first).
* NoExecute taints evict the pods that do not tolerate them (kubesim.taints).

  ``restartPolicy`` is ignored: every pod runs once. Pods are handled in arrival order, in
  passes of at most ``pass_seconds`` so that the API stays responsive with many pending pods.
"""

from __future__ import annotations

import asyncio
import calendar
import collections
import hashlib
import logging
import time
import traceback
from typing import Any

from . import commands
from .emulator import KubeEmulator
from .registries import PRIVATE_REGISTRIES, pull_refusal
from .resources import ResourceType
from .scheduling import NODES, PODS, PodKey, Scheduler, parse_quantity, pod_requests, tolerates
from .store import SECRETS, now_rfc3339
from .taints import TaintEviction
from .volumes import PodFiles, forget_pod

__all__ = ["Kubelet", "parse_quantity", "pod_requests", "tolerates"]
log = logging.getLogger("kubesim")

EXIT_CODE_ANNOTATION = "kubesim/exit-code"
RUN_SECONDS_ANNOTATION = "kubesim/run-seconds"
START_SECONDS_ANNOTATION = "kubesim/start-seconds"
NEVER_FINISH_ANNOTATION = "kubesim/never-finish"
EXIT_REASON_ANNOTATION = "kubesim/exit-reason"
EXIT_MESSAGE_ANNOTATION = "kubesim/exit-message"


class Kubelet:
    def __init__(
        self,
        emulator: KubeEmulator,
        *,
        start_delay: float = 1.0,
        run_seconds: float = 5.0,
        bind: bool = True,
        pass_seconds: float = 0.02,
        private_registries: tuple[str, ...] = PRIVATE_REGISTRIES,
    ) -> None:
        self.emulator = emulator
        self.start_delay, self.run_seconds, self.bind = start_delay, run_seconds, bind
        self.private_registries = tuple(private_registries)  # registries whose images need a pull secret
        self.pass_seconds = pass_seconds  # longest stretch the kubelet holds the loop before yielding
        self.scheduler = Scheduler(emulator)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timers: dict[PodKey, asyncio.TimerHandle] = {}
        self._dirty: collections.OrderedDict[PodKey, None] = collections.OrderedDict()  # FIFO of pods to look at
        self._unschedulable: dict[PodKey, str] = {}  # pod -> scheduling signature
        self._nodes_changed = False
        self._scheduled = False
        self._ip_counter = 0
        self.taint_eviction = TaintEviction(emulator)

    # -- lifecycle (call on the emulator's loop) ------------------------------------------
    def start(self) -> None:
        if self._loop is not None:
            return
        self._loop = asyncio.get_running_loop()
        self.emulator.add_listener(self._on_event)
        self.emulator.pod_terminator = self._terminate_gracefully
        for key, pod in self.emulator._store[PODS].items():
            self.scheduler.account(key, pod)
            self._dirty[key] = None
            self._resume_running(key, pod)
        self.taint_eviction.start()
        self._schedule()

    def _resume_running(self, key: PodKey, pod: dict) -> None:
        """A pod already Running (state loaded from a file: ``--state``) finishes when it was due to."""
        status = pod.get("status") or {}
        annotations = pod["metadata"].get("annotations") or {}
        if status.get("phase") != "Running" or key in self._timers:
            return
        started = status.get("startTime") or now_rfc3339()
        try:
            elapsed = time.time() - calendar.timegm(time.strptime(started, "%Y-%m-%dT%H:%M:%SZ"))
        except ValueError:
            elapsed = 0.0
        self._finish_later(key, annotations, started, elapsed)

    def _finish_later(self, key: PodKey, annotations: dict, started: str, elapsed: float = 0.0) -> None:
        """The pod's container exits RUN_SECONDS_ANNOTATION (or run_seconds) after it started."""
        if str(annotations.get(NEVER_FINISH_ANNOTATION, "")).lower() == "true" or self._loop is None:
            return
        run_for = float(annotations.get(RUN_SECONDS_ANNOTATION, self.run_seconds))
        self._timers[key] = self._loop.call_later(max(0.0, run_for - elapsed), self._finish, key, started)

    def stop(self) -> None:
        self.emulator.remove_listener(self._on_event)
        self.taint_eviction.stop()
        if self.emulator.pod_terminator == self._terminate_gracefully:
            self.emulator.pod_terminator = None
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._loop = None

    # -- events ----------------------------------------------------------------------------
    def _on_event(self, etype: str, rt: ResourceType, old: dict | None, new: dict) -> None:
        if rt.key == PODS:
            key = (new["metadata"].get("namespace", ""), new["metadata"]["name"])
            if etype == "DELETED":
                uid = new["metadata"].get("uid", "")
                self.emulator.container_outputs.pop(uid, None)
                forget_pod(self.emulator.volume_files, uid)
                timer = self._timers.pop(key, None)
                if timer is not None:
                    timer.cancel()
                self._unschedulable.pop(key, None)
                self._dirty.pop(key, None)
                self.scheduler.account(key, None)
                self.scheduler.forget(new)
            else:
                self.scheduler.account(key, new)
                self._dirty[key] = None
        elif rt.key == NODES:
            self._nodes_changed = True
        else:
            return
        self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled and self._loop is not None:
            self._scheduled = True
            self._loop.call_soon(self._process)

    def _process(self) -> None:
        self._scheduled = False
        if self._loop is None:
            return
        try:
            self._process_pods()
        except Exception:  # keep the loop alive; tests assert on internal_errors
            log.exception("kubesim kubelet failed")
            self.emulator.internal_errors.append(traceback.format_exc())

    def _process_pods(self) -> None:
        if self._nodes_changed:  # everything may fit differently now
            self._nodes_changed = False
            self.scheduler.nodes_changed()
            for key in self._unschedulable:
                self._dirty[key] = None
        else:
            revived = self.scheduler.take_freed()
            if revived:
                for key, signature in self._unschedulable.items():
                    if signature in revived:
                        self._dirty[key] = None
        store = self.emulator._store[PODS]
        budget = time.monotonic() + self.pass_seconds
        for _ in range(len(self._dirty)):  # pods re-queued by our own writes wait for the next pass
            if time.monotonic() > budget:
                self._schedule()  # yield to the HTTP side; the rest goes to the next pass
                return
            key, _ = self._dirty.popitem(last=False)
            pod = store.get(key)
            if pod is None or key in self._timers or (pod.get("status") or {}).get("phase", "Pending") != "Pending":
                continue
            spec = pod.get("spec") or {}
            if spec.get("nodeName"):
                self._unschedulable.pop(key, None)
                self._start_later(key, pod)
                continue
            if not self.bind or spec.get("schedulerName", "default-scheduler") != "default-scheduler":
                continue
            node, message = self.scheduler.place(pod)
            if node is None:
                self._unschedulable[key] = self.scheduler.signature(pod)
                self._mark_unschedulable(pod, message)
                continue
            self._unschedulable.pop(key, None)
            status = dict(pod.get("status") or {})
            status["conditions"] = self._set_condition(status, "PodScheduled", "True")
            bound = {**pod, "spec": {**spec, "nodeName": node.name}, "status": status}
            bound = self.emulator._commit(self.emulator._types[PODS], pod, bound, "binding")  # accounted
            self._start_later(key, bound)

    def _mark_unschedulable(self, pod: dict, message: str) -> None:
        status = dict(pod.get("status") or {})
        current = next((c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"), None)
        if current and current.get("status") == "False" and current.get("message") == message:
            return
        status["conditions"] = self._set_condition(status, "PodScheduled", "False", "Unschedulable", message)
        self.emulator._commit(self.emulator._types[PODS], pod, {**pod, "status": status}, "status")

    @staticmethod
    def _set_condition(
        status: dict, ctype: str, value: str, reason: str | None = None, message: str | None = None
    ) -> list[dict]:
        """Set one condition; like the kubelet, keep its lastTransitionTime unless its status changes."""
        current = next((c for c in status.get("conditions") or () if c.get("type") == ctype), None)
        since = current.get("lastTransitionTime") if current and current.get("status") == value else None
        cond: dict[str, Any] = {
            "type": ctype,
            "status": value,
            "lastProbeTime": None,
            "lastTransitionTime": since or now_rfc3339(),
        }
        if reason:
            cond["reason"] = reason
        if message:
            cond["message"] = message
        return [c for c in status.get("conditions") or () if c.get("type") != ctype] + [cond]

    # -- running ---------------------------------------------------------------------------
    def _start_later(self, key: PodKey, pod: dict) -> None:
        if key in self._timers or self._loop is None:
            return
        annotations = pod["metadata"].get("annotations") or {}
        delay = float(annotations.get(START_SECONDS_ANNOTATION, self.start_delay))
        self._timers[key] = self._loop.call_later(delay, self._run, key)

    def _current(self, key: PodKey, phase: str) -> dict | None:
        pod = self.emulator._store[PODS].get(key)
        if pod is None or (pod.get("status") or {}).get("phase", "Pending") != phase:
            return None
        return pod

    def _run(self, key: PodKey) -> None:
        self._timers.pop(key, None)
        pod = self._current(key, "Pending")
        if pod is None:
            return
        now = now_rfc3339()
        spec, meta = pod.get("spec") or {}, pod["metadata"]
        refusal = pull_refusal(pod, self.emulator._store[SECRETS], self.private_registries)
        if refusal:
            self._pull_failed(key, pod, refusal)
            return
        node = self.emulator._store[NODES].get(("", spec.get("nodeName", "")))
        host_ip = next(
            (
                a["address"]
                for a in ((node or {}).get("status") or {}).get("addresses") or ()
                if a.get("type") == "InternalIP"
            ),
            "10.0.0.1",
        )
        for container in spec.get("containers") or ():  # each container's command runs now, on its volumes
            files = PodFiles(self.emulator.volume_files, pod, container)
            printed = self.emulator.container_outputs.setdefault(meta["uid"], {})
            printed[container.get("name", "")] = commands.run(pod, container, files)
        self._ip_counter += 1
        pod_ip = f"10.128.{self._ip_counter // 250 % 256}.{self._ip_counter % 250 + 2}"
        status = dict(pod.get("status") or {})
        for ctype in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
            status["conditions"] = self._set_condition(status, ctype, "True")
        status.update(
            {
                "phase": "Running",
                "startTime": now,
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "containerStatuses": [
                    self._container_status(meta, c, True, {"running": {"startedAt": now}})
                    for c in spec.get("containers") or ()
                ],
            }
        )
        running = self.emulator._commit(self.emulator._types[PODS], pod, {**pod, "status": status}, "status")
        self._finish_later(key, meta.get("annotations") or {}, running["status"]["startTime"])

    def _pull_failed(self, key: PodKey, pod: dict, message: str) -> None:
        """As a kubelet: ErrImagePull at the first attempt, ImagePullBackOff after; try again later."""
        spec, meta = pod.get("spec") or {}, pod["metadata"]
        tried = any(
            ((s.get("state") or {}).get("waiting") or {}).get("reason") in ("ErrImagePull", "ImagePullBackOff")
            for s in (pod.get("status") or {}).get("containerStatuses") or ()
        )
        waiting = {"reason": "ImagePullBackOff" if tried else "ErrImagePull", "message": message}
        status = dict(pod.get("status") or {})
        status["containerStatuses"] = [
            self._container_status(meta, c, False, {"waiting": dict(waiting)}) for c in spec.get("containers") or ()
        ]
        self.emulator._commit(self.emulator._types[PODS], pod, {**pod, "status": status}, "status")
        if self._loop is not None:
            self._timers[key] = self._loop.call_later(max(self.start_delay, 0.05), self._run, key)

    def _finish(self, key: PodKey, started: str) -> None:
        self._timers.pop(key, None)
        pod = self._current(key, "Running")
        if pod is None:
            return
        meta, spec = pod["metadata"], pod.get("spec") or {}
        try:
            exit_code = int(
                (meta.get("annotations") or {}).get(EXIT_CODE_ANNOTATION, _command_exit(pod, self.emulator))
            )
        except ValueError:
            exit_code = 1
        now = now_rfc3339()
        annotations = meta.get("annotations") or {}
        terminated = {
            "exitCode": exit_code,
            "reason": annotations.get(EXIT_REASON_ANNOTATION) or ("Completed" if exit_code == 0 else "Error"),
            "startedAt": started,
            "finishedAt": now,
        }
        if annotations.get(EXIT_MESSAGE_ANNOTATION):
            terminated["message"] = annotations[EXIT_MESSAGE_ANNOTATION]
        status = dict(pod.get("status") or {})
        for ctype in ("ContainersReady", "Ready"):
            status["conditions"] = self._set_condition(status, ctype, "False", "PodCompleted")
        status["phase"] = "Succeeded" if exit_code == 0 else "Failed"
        status["containerStatuses"] = [
            self._container_status(meta, c, False, {"terminated": dict(terminated)})
            for c in spec.get("containers") or ()
        ]
        self.emulator._commit(self.emulator._types[PODS], pod, {**pod, "status": status}, "status")

    # -- graceful termination -------------------------------------------------------------------------
    def _terminate_gracefully(self, pod: dict, grace_option: object) -> dict | None:
        """A Running pod being deleted: Terminating while its preStop hooks run, then removed (module docstring).
        None: the pod may go at once (no hook, not running, grace 0, or no loop to wait on)."""
        spec, meta = pod.get("spec") or {}, pod["metadata"]
        grace_value = grace_option if grace_option is not None else spec.get("terminationGracePeriodSeconds", 30)
        try:
            grace = int(grace_value)
        except (TypeError, ValueError):
            grace = 30
        hooked = [c for c in spec.get("containers") or () if commands.pre_stop(c) is not None]
        running = (pod.get("status") or {}).get("phase") == "Running" and spec.get("nodeName")
        if grace <= 0 or not hooked or not running or self._loop is None:
            return None
        hooks = []
        for container in hooked:  # the hooks run now, on the pod's volumes (a checkpoint they write stays)
            files = PodFiles(self.emulator.volume_files, pod, container)
            outcome = commands.run_pre_stop(pod, container, files)
            printed = self.emulator.container_outputs.setdefault(meta["uid"], {})
            printed[(container.get("name", ""), "preStop")] = outcome
            hooks.append(outcome)
        key = (meta.get("namespace", ""), meta["name"])
        started = int(time.time())  # whole seconds: the hook's start is deletionTimestamp - the grace period
        rt = self.emulator._types[PODS]
        marked = {
            **pod,
            "metadata": {
                **meta,
                "deletionTimestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started + grace)),
                "deletionGracePeriodSeconds": grace,
                "resourceVersion": self.emulator._next_rv(),
            },
        }
        self.emulator._store[rt.key][key] = marked
        self.emulator._emit(rt, "MODIFIED", pod, marked)
        timer = self._timers.pop(key, None)  # the container no longer ends on its own: it is being stopped
        if timer is not None:
            timer.cancel()
        hook_seconds = max(outcome.seconds for outcome in hooks)
        self._timers[key] = self._loop.call_later(min(hook_seconds, grace), self._killed, key, meta["uid"])
        return marked

    def _killed(self, key: PodKey, uid: str) -> None:
        """The hooks are done (or the grace period is over): the containers are stopped, the pod is removed."""
        self._timers.pop(key, None)
        pod = self.emulator._store[PODS].get(key)
        if pod is not None and pod["metadata"]["uid"] == uid:
            self.emulator._remove(self.emulator._types[PODS], key)

    @staticmethod
    def _container_status(meta: dict, container: dict, ready: bool, state: dict) -> dict:
        digest = hashlib.sha256(f"{meta['uid']}/{container.get('name')}".encode()).hexdigest()
        terminated = state.get("terminated")
        if terminated is not None:
            terminated["containerID"] = f"cri-o://{digest}"
        return {
            "name": container.get("name", ""),
            "image": container.get("image", ""),
            "imageID": f"{container.get('image', '')}@sha256:{digest}",
            "containerID": f"cri-o://{digest}",
            "ready": ready,
            "started": ready,
            "restartCount": 0,
            "state": state,
        }


def _command_exit(pod: dict, emulator: KubeEmulator) -> int:
    """The exit code the containers' own commands gave (`exit 3`, `false`): the first that is not 0."""
    printed = emulator.container_outputs.get(pod["metadata"].get("uid", ""), {})
    codes = (
        (printed.get(c.get("name", "")) or commands.run(pod, c)).exit_code
        for c in (pod.get("spec") or {}).get("containers") or ()
    )
    return next((code for code in codes if code != 0), 0)
