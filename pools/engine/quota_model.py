"""The quota vocabulary the fair-share, admission and reclaim engines share (docs/admission.md).

Units, everywhere in these modules: every amount is a non-negative `int`:
* `gpu`    — whole devices (count);
* `cpu`    — millicores (1 core = 1000);
* `memory` — bytes.
The doors turn Kubernetes quantities ("8", "500m", "64Gi") into these ints before calling the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pools.engine.errors import EngineError

GPU, CPU, MEMORY = "gpu", "cpu", "memory"
RESOURCES: tuple[str, ...] = (GPU, CPU, MEMORY)
_KNOWN = frozenset(RESOURCES)


@dataclass(frozen=True, slots=True)
class Resources:
    """An amount of each quota resource: gpu (count), cpu (millicores), memory (bytes)."""

    gpu: int = 0
    cpu: int = 0
    memory: int = 0

    @classmethod
    def of(cls, values: Mapping[str, int] | None) -> Resources:
        values = values or {}
        if not values.keys() <= _KNOWN:  # a view's subset test: the quota state reads thousands a page
            unknown = sorted(set(values) - _KNOWN)
            raise EngineError(f"unknown resource; expected one of {', '.join(RESOURCES)}", value=unknown[0])
        return cls(int(values.get(GPU, 0)), int(values.get(CPU, 0)), int(values.get(MEMORY, 0)))

    def get(self, resource: str) -> int:
        return getattr(self, resource)

    def __add__(self, other: Resources) -> Resources:
        return Resources(self.gpu + other.gpu, self.cpu + other.cpu, self.memory + other.memory)

    def __sub__(self, other: Resources) -> Resources:
        return Resources(self.gpu - other.gpu, self.cpu - other.cpu, self.memory - other.memory)

    def clamp(self) -> Resources:
        """Negative parts become 0 (a shortfall vector from a difference)."""
        return Resources(max(0, self.gpu), max(0, self.cpu), max(0, self.memory))

    def fits_in(self, room: Resources) -> bool:
        return self.gpu <= room.gpu and self.cpu <= room.cpu and self.memory <= room.memory

    def is_zero(self) -> bool:
        return not (self.gpu or self.cpu or self.memory)

    def as_dict(self) -> dict[str, int]:
        return {GPU: self.gpu, CPU: self.cpu, MEMORY: self.memory}


ZERO = Resources()

USAGE_SCALE = 1_000_000  # normalised usage is in parts per million of what the node pool could give
K_SCALE = 1000  # the time-based fair share's k is in thousandths (1000 = 1.0)


@dataclass(frozen=True, slots=True)
class UsageHistory:
    """Time-based fair share (pools.engine.fairshare, "Time-based fair share"): per resource, each project's
    past use of the node pool normalised to what the node pool could have given over the window, in parts per
    million (`USAGE_SCALE`: 240_000 = 24 GPU-hours out of 100 possible); `k_milli`, how strongly usage moves
    the over-quota weights, in thousandths (`K_SCALE`). A project missing from `usage` used nothing."""

    usage: Mapping[str, Mapping[str, int]]  # resource → project → parts per million
    k_milli: int = K_SCALE

    def of(self, resource: str) -> Mapping[str, int]:
        return self.usage.get(resource, {})


@dataclass(frozen=True, slots=True)
class Quota:
    """One team's quota for one resource in one node pool.

    `deserved`: guaranteed amount (≥ 0). `limit`: hard cap, None = no cap (else ≥ deserved).
    `weight`: over-quota weight (≥ 0; 0 = never gets surplus). `lend`: False = "never lend": the unused part
    of `deserved` is kept idle for this team, never another team's over-quota share (fairshare.divide)."""

    deserved: int = 0
    limit: int | None = None
    weight: int = 1
    lend: bool = True

    def check(self, where: str) -> None:
        if self.deserved < 0:
            raise EngineError("deserved quota cannot be negative", field=f"{where}.deserved", value=self.deserved)
        if self.weight < 0:
            raise EngineError("over-quota weight cannot be negative", field=f"{where}.weight", value=self.weight)
        if self.limit is not None and self.limit < self.deserved:
            raise EngineError(
                f"limit is below the deserved quota {self.deserved}", field=f"{where}.limit", value=self.limit
            )


NO_QUOTA = Quota(0, None, 1)


@dataclass(frozen=True, slots=True)
class TeamQuota:
    """A department's or a project's quotas in one node pool, per resource (missing resource = NO_QUOTA).

    `priority`: over-quota rank, higher is served first (projects; departments usually 0).
    `department`: for a project, its department's name; None for a department.
    `created`: any sortable creation key (epoch seconds); the older team wins a tie for a leftover unit of
    fair share, as in KAI-Scheduler (0 when unknown: ties then fall to the name)."""

    name: str
    quotas: Mapping[str, Quota] = field(default_factory=dict)
    priority: int = 0
    department: str | None = None
    created: float = 0.0

    def quota(self, resource: str) -> Quota:
        return self.quotas.get(resource, NO_QUOTA)


@dataclass(frozen=True, slots=True)
class QuotaTree:
    """Departments and their projects in one node pool. Names are unique per kind."""

    departments: tuple[TeamQuota, ...]
    projects: tuple[TeamQuota, ...]

    def check(self) -> None:
        """Raise EngineError on a duplicate name, an unknown department, or a bad quota."""
        departments = _unique(self.departments, "departments")
        _unique(self.projects, "projects")
        for kind, teams in (("departments", self.departments), ("projects", self.projects)):
            for team in teams:
                for resource, quota in team.quotas.items():
                    if resource not in RESOURCES:
                        raise EngineError("unknown resource", field=f"{kind}.{team.name}", value=resource)
                    if (
                        quota.deserved < 0
                        or quota.weight < 0
                        or (quota.limit is not None and quota.limit < quota.deserved)
                    ):
                        quota.check(f"{kind}.{team.name}.{resource}")  # raises, naming the field
        for project in self.projects:
            if project.department not in departments:
                raise EngineError("unknown department", field=f"projects.{project.name}", value=project.department)

    def projects_of(self, department: str) -> list[TeamQuota]:
        return [p for p in self.projects if p.department == department]


NO_PROJECT = "(none)"  # the team of workflows charged to no project (no valid project name has parentheses)


def with_no_project(tree: QuotaTree) -> QuotaTree:
    """The tree with the team `(none)` added, as a department and its one project, ranked after every project:
    no deserved quota, over-quota weight 1 (docs/admission.md; quotas.services.state)."""
    lowest = min((p.priority for p in tree.projects), default=0)
    none = {resource: Quota(deserved=0, limit=None, weight=1) for resource in RESOURCES}
    return QuotaTree(
        departments=(*tree.departments, TeamQuota(NO_PROJECT, none)),
        projects=(*tree.projects, TeamQuota(NO_PROJECT, none, priority=lowest - 1, department=NO_PROJECT)),
    )


_DERIVED: dict[int, tuple[QuotaTree, dict]] = {}  # id(tree) → (the tree, what was derived from it)
_DERIVED_MAX = 256


def derived(tree: QuotaTree, name: str, build):
    """`build(tree)`, computed once per tree object and kept (a pass after pass over the same tree, as the
    what-if replay runs, derives its indexes once). Trees are immutable; the entry holds the tree itself, so an
    id is never mistaken for another tree's. A bounded memo: past `_DERIVED_MAX` trees it starts again."""
    entry = _DERIVED.get(id(tree))
    if entry is None or entry[0] is not tree:
        if len(_DERIVED) >= _DERIVED_MAX:
            _DERIVED.clear()
        entry = _DERIVED[id(tree)] = (tree, {})
    found = entry[1]
    if name not in found:
        found[name] = build(tree)
    return found[name]


def _unique(teams: Iterable[TeamQuota], kind: str) -> set[str]:
    seen: set[str] = set()
    for team in teams:
        if team.name in seen:
            raise EngineError("duplicate name", field=kind, value=team.name)
        seen.add(team.name)
    return seen
