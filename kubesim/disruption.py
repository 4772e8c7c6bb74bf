"""PodDisruptionBudgets (policy/v1) and the Eviction API, as kube-controller-manager's disruption controller and
the API server's ``pods/eviction`` subresource have them.

The budget's status, recomputed whenever a pod or a budget of its namespace changes:

* ``expectedPods``: the pods its selector matches (a real controller asks their controllers' scale; the
  simulated cluster runs no controllers, so it counts the pods); ``maxUnavailable`` and a percentage
  ``minAvailable`` need pods that have a controller (``ownerReferences`` with ``controller: true``), as the real
  controller does: a bare pod fails the budget safe (``disruptionsAllowed`` 0, condition reason ``SyncFailed``);
* ``currentHealthy``: matching pods that are Ready, not being deleted and not already granted an eviction
  (``disruptedPods``);
* ``desiredHealthy``: ``minAvailable`` (a percentage of expectedPods, rounded up), or expectedPods minus
  ``maxUnavailable`` (a percentage rounded up);
* ``disruptionsAllowed``: currentHealthy - desiredHealthy, at least 0; the ``DisruptionAllowed`` condition
  (``SufficientPods`` / ``InsufficientPods``); ``observedGeneration``.

An eviction (``POST …/pods/NAME/eviction`` with a policy/v1 ``Eviction``) is granted (201) when the pod may be
disrupted: it is not Running (Pending, finished) or already being deleted; no budget matches it; or its one
budget allows a disruption, which is then spent (``disruptedPods``) before the pod is deleted gracefully
(kubesim.kubelet runs its preStop hook within its grace period), with the condition ``DisruptionTarget``
(reason ``EvictionByEvictionAPI``). A budget that allows none answers 429 ``TooManyRequests``, "Cannot evict pod
as it would violate the pod's disruption budget.", its cause naming the budget's needs; two budgets for one pod
answer 500, as the real API server does. Not Ready pods are evicted when the budget is healthy
(``unhealthyPodEvictionPolicy: IfHealthyBudget``, the default) or always (``AlwaysAllow``).
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from .resources import ApiError, ResourceType, status_body
from .selectors import LabelSelector, SelectorError
from .store import now_rfc3339

if TYPE_CHECKING:
    from .emulator import KubeEmulator

PDBS = ("policy", "poddisruptionbudgets")
PODS = ("", "pods")
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
EVICTED_REASON = "EvictionByEvictionAPI"
EVICTED_MESSAGE = "Eviction API: evicting"
_PERCENT = re.compile(r"^(\d+)%$")


def _ready(pod: dict) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in (pod.get("status") or {}).get("conditions") or ()
    )


def _has_controller(pod: dict) -> bool:
    return any(ref.get("controller") for ref in pod["metadata"].get("ownerReferences") or ())


def _selector(pdb: dict) -> LabelSelector | None:
    """The budget's selector; None matches nothing (a null selector), an empty one every pod of the namespace."""
    raw = (pdb.get("spec") or {}).get("selector")
    if raw is None:
        return None
    try:
        return LabelSelector.from_match_expressions(raw.get("matchLabels"), raw.get("matchExpressions"))
    except (SelectorError, AttributeError):
        return None


def _scaled(value: Any, total: int) -> int | None:
    """An IntOrString: an integer, or a percentage of ``total`` rounded up (as the controller rounds)."""
    if isinstance(value, int):
        return value
    match = _PERCENT.match(str(value))
    if match is None:
        return int(value) if str(value).isdigit() else None
    return math.ceil(int(match.group(1)) * total / 100)


class DisruptionController:
    """Keeps budgets' status and answers evictions; runs on the emulator's loop (the emulator owns it)."""

    def __init__(self, emulator: KubeEmulator) -> None:
        self.emulator = emulator
        self._dirty: set[str] = set()  # namespaces whose budgets need their status again
        self._scheduled = False
        emulator.add_listener(self._on_event)

    # -- the controller --------------------------------------------------------------------
    def budgets(self, namespace: str) -> list[dict]:
        return [pdb for (ns, _), pdb in self.emulator._store[PDBS].items() if ns == namespace]

    def _on_event(self, etype: str, rt: ResourceType, old: dict | None, new: dict) -> None:
        if rt.key == PDBS:
            if etype == "DELETED" or old is None or old.get("spec") != new.get("spec"):
                self._mark(new["metadata"].get("namespace", ""))
        elif rt.key == PODS:
            namespace = new["metadata"].get("namespace", "")
            if any(True for (ns, _) in self.emulator._store[PDBS] if ns == namespace):
                self._mark(namespace)

    def _mark(self, namespace: str) -> None:
        """Recompute soon, not inside the write that is being announced (as the real controller, later)."""
        self._dirty.add(namespace)
        loop = self.emulator._loop
        if loop is None or not loop.is_running():
            self.sync()
        elif not self._scheduled:
            self._scheduled = True
            loop.call_soon(self.sync)

    def sync(self) -> None:
        self._scheduled = False
        dirty, self._dirty = self._dirty, set()
        for namespace in sorted(dirty):
            for pdb in self.budgets(namespace):
                self._write_status(pdb)

    def _write_status(self, pdb: dict) -> dict:
        status = self.status_of(pdb)
        if status == pdb.get("status"):
            return pdb
        rt = self.emulator._types[PDBS]
        return self.emulator._commit(rt, pdb, {**pdb, "status": status}, "status")

    def status_of(self, pdb: dict) -> dict:
        namespace = pdb["metadata"].get("namespace", "")
        spec, old = pdb.get("spec") or {}, pdb.get("status") or {}
        selector = _selector(pdb)
        pods = [
            pod
            for (ns, _), pod in self.emulator._store[PODS].items()
            if ns == namespace and selector is not None and selector.matches(pod["metadata"].get("labels"))
        ]
        live = {pod["metadata"]["name"] for pod in pods if not pod["metadata"].get("deletionTimestamp")}
        disrupted = {name: at for name, at in (old.get("disruptedPods") or {}).items() if name in live}
        healthy = sum(
            1
            for pod in pods
            if _ready(pod) and not pod["metadata"].get("deletionTimestamp") and pod["metadata"]["name"] not in disrupted
        )
        expected, failure = len(pods), None
        if "maxUnavailable" in spec or not isinstance(spec.get("minAvailable", 1), int):
            bare = next((pod for pod in pods if not _has_controller(pod)), None)
            if bare is not None:
                failure = f'found no controller ref for pod "{bare["metadata"]["name"]}"'
        if "maxUnavailable" in spec:
            unavailable = _scaled(spec["maxUnavailable"], expected)
            desired = max(0, expected - (unavailable or 0))
        else:
            desired = _scaled(spec.get("minAvailable", 1), expected) or 0
        allowed = 0 if failure else max(0, healthy - desired)
        if failure:
            condition = {"reason": "SyncFailed", "status": "False", "message": failure}
        elif allowed > 0:
            condition = {"reason": "SufficientPods", "status": "True", "message": ""}
        else:
            condition = {"reason": "InsufficientPods", "status": "False", "message": ""}
        before = next((c for c in old.get("conditions") or () if c.get("type") == "DisruptionAllowed"), {})
        since = before.get("lastTransitionTime") if before.get("status") == condition["status"] else None
        status = {
            "observedGeneration": pdb["metadata"].get("generation", 1),
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "disruptionsAllowed": allowed,
            "expectedPods": expected,
            "conditions": [
                {
                    "type": "DisruptionAllowed",
                    "observedGeneration": pdb["metadata"].get("generation", 1),
                    "lastTransitionTime": since or now_rfc3339(),
                    **condition,
                }
            ],
        }
        if disrupted:
            status["disruptedPods"] = disrupted
        return status

    # -- the eviction subresource ------------------------------------------------------------
    def evict(self, namespace: str, name: str, body: Any) -> dict:
        """``POST pods/NAME/eviction``: the Status of a granted eviction, or the ApiError of a refused one."""
        if body is not None and not isinstance(body, dict):
            raise ApiError(400, "the body of the request was in an unknown format")
        body = body or {}
        if body.get("kind") not in (None, "Eviction"):
            raise ApiError(400, f"the kind in the data ({body['kind']}) does not match the expected kind (Eviction)")
        if (body.get("metadata") or {}).get("name", name) != name:
            raise ApiError(400, "name in URL does not match name in Eviction object")
        options = body.get("deleteOptions") or None
        rt = self.emulator._types[PODS]
        pod = self.emulator._get(rt, namespace, name)
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if pod["metadata"].get("deletionTimestamp") or phase != "Running":
            self.emulator._delete(rt, namespace, name, options)  # nothing to protect: no budget is asked
            return status_body(201)
        budgets = [pdb for pdb in self.budgets(namespace) if self._matches(pdb, pod)]
        if len(budgets) > 1:
            raise ApiError(
                500, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
            )
        if budgets:
            pdb = self._write_status(budgets[0])  # the budget as of now (the real one may lag; never here)
            status = pdb["status"]
            unhealthy_ok = not _ready(pod) and (
                (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow"
                or status["currentHealthy"] >= status["desiredHealthy"] > 0
            )
            if not unhealthy_ok:
                if status["disruptionsAllowed"] <= 0:
                    needs = (
                        f"The disruption budget {pdb['metadata']['name']} needs {status['desiredHealthy']} healthy "
                        f"pods and has {status['currentHealthy']} currently"
                    )
                    causes = [{"reason": DISRUPTION_BUDGET_CAUSE, "message": needs}]
                    raise ApiError(429, VIOLATION, "TooManyRequests", {"causes": causes})
                spent = {
                    **status,
                    "disruptionsAllowed": status["disruptionsAllowed"] - 1,
                    "disruptedPods": {**(status.get("disruptedPods") or {}), name: now_rfc3339()},
                }
                self.emulator._commit(self.emulator._types[PDBS], pdb, {**pdb, "status": spent}, "status")
        self._mark_disrupted(pod)
        self.emulator._delete(rt, namespace, name, options)
        return status_body(201)

    def _matches(self, pdb: dict, pod: dict) -> bool:
        selector = _selector(pdb)
        return selector is not None and selector.matches(pod["metadata"].get("labels"))

    def _mark_disrupted(self, pod: dict) -> None:
        from .kubelet import Kubelet  # the kubelet's condition writer (kubesim.kubelet imports this module's users)

        status = dict(pod.get("status") or {})
        status["conditions"] = Kubelet._set_condition(
            status, "DisruptionTarget", "True", EVICTED_REASON, EVICTED_MESSAGE
        )
        self.emulator._commit(self.emulator._types[PODS], pod, {**pod, "status": status}, "status")
