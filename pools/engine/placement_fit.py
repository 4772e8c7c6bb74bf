"""Pod resource requests and the NodeResourcesFit check (docs/scheduling-semantics.md §3.4).

Requests are aggregated exactly as k8s.io/component-helpers resource.PodRequests does, in exact decimals,
then converted once to scheduler units: cpu in millicores (MilliValue), everything else Value() (ceil).
* API defaulting first: a limit with no request becomes the request;
* sum over app containers; restartable init containers ("sidecars", restartPolicy: Always) are added
  to that sum; every other init container needs its own request plus the sidecars started before it;
  pod request = max(sum, max over init containers) + overhead;
* pod-level `spec.resources.requests` (PodLevelResources) replace the aggregate for cpu and memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import ROUND_CEILING, Context, Decimal

from pools.engine.errors import EngineError
from pools.engine.k8s_syntax import path_join
from pools.engine.quantity import QuantityError, human, human_pair, parse_quantity

CPU, MEMORY, EPHEMERAL_STORAGE, PODS = "cpu", "memory", "ephemeral-storage", "pods"
_POD_LEVEL_RESOURCES = (CPU, MEMORY)

Requests = dict[str, Decimal]
_EXACT = Context(prec=80)  # sums of nano-precise amounts stay exact


def is_scalar_resource(name: str) -> bool:
    """IsScalarResourceName: extended, hugepages-*, kubernetes.io/-prefixed native, attachable-volumes-*."""
    if name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name:
        return True
    return "/" in name and not name.startswith("requests.")  # extended resource


def is_fit_resource(name: str) -> bool:
    """Resources NodeResourcesFit compares; anything else in a request (e.g. `storage`) is ignored."""
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar_resource(name)


def to_scheduler_units(name: str, amount: Decimal) -> int:
    """MilliValue for cpu, Value() for everything else; both round up."""
    scaled = _EXACT.scaleb(amount, 3) if name == CPU else amount
    return int(scaled.to_integral_value(rounding=ROUND_CEILING))


def parse_resource_list(raw: object, path: str) -> Requests:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise EngineError("resources must map resource names to quantities", field=path, value=_short(raw))
    parsed = {}
    for name, text in raw.items():
        try:
            parsed[str(name)] = parse_quantity(text).value
        except QuantityError as error:
            raise error.at(path_join(path, str(name))) from None
    return parsed


def _container_requests(container: object, path: str) -> Requests:
    """The container's requests after API defaulting copies limits into unset requests."""
    if not isinstance(container, dict):
        raise EngineError("a container must be an object", field=path, value=_short(container))
    resources = container.get("resources") or {}
    if not isinstance(resources, dict):
        raise EngineError("resources must be an object", field=f"{path}.resources", value=_short(resources))
    requests = parse_resource_list(resources.get("requests"), f"{path}.resources.requests")
    limits = parse_resource_list(resources.get("limits"), f"{path}.resources.limits")
    return {**limits, **requests}


def _add(total: Requests, more: Mapping[str, Decimal]) -> None:
    for name, amount in more.items():
        total[name] = _EXACT.add(total.get(name, Decimal(0)), amount)


def _max_into(total: Requests, other: Mapping[str, Decimal]) -> None:
    for name, amount in other.items():
        if name not in total or amount > total[name]:
            total[name] = amount


def _containers(spec: dict, key: str) -> list:
    value = spec.get(key) or []
    if not isinstance(value, list):
        raise EngineError(f"{key} must be a list", field=f"spec.{key}", value=_short(value))
    return value


def exact_pod_requests(spec: dict) -> Requests:
    """resource.PodRequests in exact decimals (see module docstring)."""
    total: Requests = {}
    for index, container in enumerate(_containers(spec, "containers")):
        _add(total, _container_requests(container, f"spec.containers[{index}]"))
    sidecars: Requests = {}
    init_peak: Requests = {}
    for index, container in enumerate(_containers(spec, "initContainers")):
        own = _container_requests(container, f"spec.initContainers[{index}]")
        if container.get("restartPolicy") == "Always":  # a sidecar keeps running next to the app
            _add(total, own)
            _add(sidecars, own)
            _max_into(init_peak, sidecars)
        else:
            needed = dict(own)
            _add(needed, sidecars)
            _max_into(init_peak, needed)
    _max_into(total, init_peak)
    pod_level = spec.get("resources") or {}
    if isinstance(pod_level, dict) and (pod_level.get("requests") or pod_level.get("limits")):
        pod_requests_ = {
            **parse_resource_list(pod_level.get("limits"), "spec.resources.limits"),
            **parse_resource_list(pod_level.get("requests"), "spec.resources.requests"),
        }
        for name in _POD_LEVEL_RESOURCES:
            if name in pod_requests_:
                total[name] = pod_requests_[name]
    _add(total, parse_resource_list(spec.get("overhead"), "spec.overhead"))
    return total


def pod_spec(pod: dict) -> dict:
    """The PodSpec of a Pod manifest (a bare PodSpec is accepted too)."""
    if not isinstance(pod, dict):
        raise EngineError("a pod must be an object", field="", value=_short(pod))
    spec = pod.get("spec", pod if "containers" in pod else None)
    if not isinstance(spec, dict):
        raise EngineError("pod has no spec", field="spec", value=_short(spec))
    return spec


def pod_requests(pod: dict) -> dict[str, int]:
    """The pod's effective requests in scheduler units (cpu millicores, others base units, rounded up)."""
    return {name: to_scheduler_units(name, amount) for name, amount in exact_pod_requests(pod_spec(pod)).items()}


def parse_allocatable(raw: object, path: str) -> dict[str, int]:
    return {name: to_scheduler_units(name, amount) for name, amount in parse_resource_list(raw, path).items()}


def sum_requests(pods: Iterable[dict[str, int]]) -> dict[str, int]:
    total: dict[str, int] = {}
    for requests in pods:
        for name, amount in requests.items():
            total[name] = total.get(name, 0) + amount
    return total


def show_amount(name: str, amount: int) -> str:
    """Human form of a scheduler-unit amount (`pools.engine.quantity.human`): cores, binary units, counts."""
    return human(name, amount)


def fit_reasons(
    requests: Mapping[str, int], allocatable: Mapping[str, int], requested: Mapping[str, int], pod_count: int
) -> list[str]:
    """fitsRequest: pod count first, then every resource the pod asks for; all failures are reported."""
    reasons = []
    allowed_pods = allocatable.get(PODS, 0)
    if pod_count + 1 > allowed_pods:
        reasons.append(f"Too many pods: {pod_count} of {allowed_pods} allowed pods already on the node")
    for name, amount in requests.items():
        if amount <= 0:
            continue
        capacity = allocatable.get(name, 0)  # an extended resource the node does not advertise is 0
        free = capacity - requested.get(name, 0)
        if amount > free:
            shown_amount, shown_free = human_pair(name, amount, free)
            reasons.append(
                f"Insufficient {name}: requested {shown_amount}, free {shown_free} of {human(name, capacity)}"
            )
    return reasons


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
