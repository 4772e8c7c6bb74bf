"""Custom resources: Karpenter's NodePools (always served, as on a cluster with Karpenter installed), and those
of the quota schedulers the portal can delegate to, served on request.

``KubeEmulator(schedulers=("kai", "kueue"))`` (or ``python -m kubesim --schedulers kai,kueue``, or
``emulator.serve_schedulers("kai")`` on a running one) serves them like a cluster with those CRDs installed:
CRUD, list with selectors, watch, and the ``status`` subresource where the CRD has one (status is dropped on
create and kept on update, as an apiserver does; a test plays the controller with ``set_status``).
No schema validation but the NodePool's bounds (``validate``): the portal checks its objects against the
published schemas before it sends them.
Scope and names as in the CRDs (NVIDIA/KAI-Scheduler, kubernetes-sigs/kueue; see clusters/schedulers/crds/).
"""

from __future__ import annotations

import re

from .resources import ApiError, ResourceType

# karpenter.sh/v1 NodePool (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go): cluster-scoped, with status.
# The portal writes them for backends whose machine provider is Karpenter (clusters.machinepools.providers);
# on the emulator: `emulator.list("karpenter.sh/nodepools")`.
KARPENTER_RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("karpenter.sh", "v1", "nodepools", "NodePool", False, "nodepool", (), ("status",)),
)

SCHEDULER_RESOURCES: dict[str, tuple[ResourceType, ...]] = {
    "kai": (ResourceType("scheduling.run.ai", "v2", "queues", "Queue", False, "queue", (), ("status",)),),
    "kueue": (
        ResourceType(
            "kueue.x-k8s.io",
            "v1beta1",
            "resourceflavors",
            "ResourceFlavor",
            False,
            "resourceflavor",
            ("flavor", "flavors", "rf"),
            (),
        ),
        # hierarchical cohorts: Cohort v1beta1 (Kueue v0.13+; spec.parentName), cluster-scoped, with status
        ResourceType("kueue.x-k8s.io", "v1beta1", "cohorts", "Cohort", False, "cohort", (), ("status",)),
        ResourceType(
            "kueue.x-k8s.io", "v1beta1", "clusterqueues", "ClusterQueue", False, "clusterqueue", ("cq",), ("status",)
        ),
        ResourceType(
            "kueue.x-k8s.io",
            "v1beta1",
            "localqueues",
            "LocalQueue",
            True,
            "localqueue",
            ("queue", "queues", "lq"),
            ("status",),
        ),
    ),
}


def scheduler_resources(names) -> list[ResourceType]:
    """The resource types of the named schedulers; an unknown name raises ValueError naming the known ones."""
    types = []
    for name in names:
        if name not in SCHEDULER_RESOURCES:
            raise ValueError(f"unknown scheduler {name!r}; known: {', '.join(SCHEDULER_RESOURCES)}")
        types.extend(SCHEDULER_RESOURCES[name])
    return types


# Karpenter's NodePool (karpenter.sh/v1, cluster-scoped), served when the simulated machine pools run
# (kubesim.autoscaler registers it if nothing else has): the NodePools the portal writes become nodes.
KARPENTER_NODEPOOL = ResourceType("karpenter.sh", "v1", "nodepools", "NodePool", False, "nodepool", (), ("status",))

# The bounds the NodePool CRD's OpenAPI schema puts on what a client sends (kubernetes-sigs/karpenter
# pkg/apis/crds/karpenter.sh_nodepools.yaml): `spec.limits` values are quantities, `spec.weight` 1-100. The
# apiserver refuses anything else with a 422 before Karpenter sees it; kubesim does too, so a NodePool it
# stores always has limits it can count (the cluster cap, kubesim.autoscaler, bounds the nodes themselves).
QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
NODEPOOL_WEIGHT = (1, 100)
# The same CRD's rules on requirements and disruption (pkg/apis/v1/nodepool.go, commit 013941a7): at most 100
# requirements, known operators, `In` with values, `Gt`/`Lt` with one non-negative integer; consolidationPolicy
# and budget reasons from their enums, consolidateAfter and budget nodes/duration by pattern, at most 50
# budgets, schedule only with duration; a static NodePool (replicas) takes only limits.nodes.
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")
DISRUPTION_REASONS = ("Underutilized", "Empty", "Drifted")
CONSOLIDATE_AFTER = re.compile(r"^(([0-9]+(s|m|h))+|Never)$")
BUDGET_NODES = re.compile(r"^((100|[0-9]{1,2})%|[0-9]+)$")
BUDGET_DURATION = re.compile(r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$")
MAX_REQUIREMENTS, MAX_BUDGETS = 100, 50


def validate(rt: ResourceType, obj: dict) -> None:
    """Refuse (422 Invalid, the apiserver's words) an object its CRD's schema would refuse; only NodePools'."""
    if rt.key != KARPENTER_NODEPOOL.key:
        return
    problems = _nodepool_problems(obj.get("spec") or {})
    if problems:
        name = (obj.get("metadata") or {}).get("name", "")
        raise ApiError(422, f'{rt.kind}.{rt.group} "{name}" is invalid: ' + ", ".join(problems), "Invalid")


def _nodepool_problems(spec: dict) -> list[str]:
    problems = []
    limits = spec.get("limits")
    if limits is not None and not isinstance(limits, dict):
        kind = type(limits).__name__
        problems.append(f'spec.limits: Invalid value: "{kind}": spec.limits in body must be of type object')
        limits = None
    for resource, value in (limits or {}).items():
        field = f"spec.limits.{resource}"
        if isinstance(value, bool) or not isinstance(value, (int, str)) or not QUANTITY.match(str(value)):
            problems.append(f"{field}: Invalid value: \"{value}\": {field} in body should match '{QUANTITY.pattern}'")
    weight = spec.get("weight")
    least, most = NODEPOOL_WEIGHT
    if weight is not None and (isinstance(weight, bool) or not isinstance(weight, int)):
        problems.append(f'spec.weight: Invalid value: "{weight}": spec.weight in body must be of type integer')
    elif weight is not None and not least <= weight <= most:
        bound = f"less than or equal to {most}" if weight > most else f"greater than or equal to {least}"
        problems.append(f"spec.weight: Invalid value: {weight}: spec.weight in body should be {bound}")
    if "replicas" in spec and set(limits or {}) - {"nodes"}:
        problems.append("spec: Invalid value: \"object\": only 'limits.nodes' is supported on static NodePools")
    template_spec = (spec.get("template") or {}).get("spec") or {}
    problems += _requirement_problems(template_spec.get("requirements") or [])
    problems += _disruption_problems(spec.get("disruption") or {})
    return problems


def _requirement_problems(requirements: list) -> list[str]:
    field = "spec.template.spec.requirements"
    if len(requirements) > MAX_REQUIREMENTS:
        return [f"{field}: Too many: {len(requirements)}: must have at most {MAX_REQUIREMENTS} items"]
    problems = []
    for index, requirement in enumerate(requirements):
        operator, values = requirement.get("operator"), requirement.get("values") or []
        if operator not in OPERATORS:
            supported = ", ".join(f'"{name}"' for name in OPERATORS)
            problems.append(
                f'{field}[{index}].operator: Unsupported value: "{operator}": supported values: {supported}'
            )
        elif operator == "In" and not values:
            problems.append(
                f"{field}: Invalid value: \"array\": requirements with operator 'In' must have a value defined"
            )
        elif operator in ("Gt", "Lt", "Gte", "Lte") and (len(values) != 1 or not str(values[0]).isdigit()):
            problems.append(
                f"{field}: Invalid value: \"array\": requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a "
                "single positive integer value"
            )
    return problems


def _disruption_problems(disruption: dict) -> list[str]:
    field, problems = "spec.disruption", []
    policy = disruption.get("consolidationPolicy")
    if policy is not None and policy not in CONSOLIDATION_POLICIES:
        problems.append(
            f'{field}.consolidationPolicy: Unsupported value: "{policy}": supported values: "WhenEmpty", '
            '"WhenEmptyOrUnderutilized"'
        )
    after = disruption.get("consolidateAfter")
    if after is not None and not CONSOLIDATE_AFTER.match(str(after)):
        problems.append(
            f'{field}.consolidateAfter: Invalid value: "{after}": {field}.consolidateAfter in body should match '
            f"'{CONSOLIDATE_AFTER.pattern}'"
        )
    budgets = disruption.get("budgets") or []
    if len(budgets) > MAX_BUDGETS:
        return [*problems, f"{field}.budgets: Too many: {len(budgets)}: must have at most {MAX_BUDGETS} items"]
    for index, budget in enumerate(budgets):
        at = f"{field}.budgets[{index}]"
        if not BUDGET_NODES.match(str(budget.get("nodes", ""))):
            problems.append(
                f'{at}.nodes: Invalid value: "{budget.get("nodes")}": {at}.nodes in body should match '
                f"'{BUDGET_NODES.pattern}'"
            )
        if ("schedule" in budget) != ("duration" in budget):
            problems.append(f"{field}.budgets: Invalid value: \"array\": 'schedule' must be set with 'duration'")
        if "duration" in budget and not BUDGET_DURATION.match(str(budget["duration"])):
            problems.append(
                f'{at}.duration: Invalid value: "{budget["duration"]}": {at}.duration in body should match '
                f"'{BUDGET_DURATION.pattern}'"
            )
        for reason in budget.get("reasons") or ():
            if reason not in DISRUPTION_REASONS:
                problems.append(
                    f'{at}.reasons: Unsupported value: "{reason}": supported values: "Underutilized", "Empty", '
                    '"Drifted"'
                )
    return problems
