"""The quotas in force at a moment: what-if's baseline (docs/quotas.md, "What-if"). Each node pool's NODE_POOL
revision current then (configs keeps every write as a revision, configs.models) gives its departments' and
projects' quotas; the teams themselves (a project's department and priority, a team's age) are today's
(teams.models: their history is not kept), and a team the revision names that no longer exists is left out.

Per node pool, one of:
- a revision written at or before the moment: its quotas, in place of today's, for the teams it names; a team of
  today's tree it does not name had no quota then (zero quotas: snapshots leave zero quotas out);
- none (the node pool was created later), or its latest one then a deletion: today's tree, said as such.

Capacities stay today's (nodes have no config history); the replay's settings too. Three queries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import datetime

from django.db.models import OuterRef, Subquery

from configs.models import ConfigType, Revision
from pools.engine.quota_model import Quota, QuotaTree, TeamQuota
from teams.models import Department, Project


@dataclasses.dataclass(frozen=True)
class TreesAt:
    trees: dict[str, QuotaTree]
    revisions: dict[str, int | None]  # node pool → the revision read (None: today's tree, no revision then)


def trees_at(moment: datetime, today: Mapping[str, QuotaTree]) -> TreesAt:
    """Each node pool of `today` with the quotas of its NODE_POOL revision current at `moment` (module docstring)."""
    in_force = Revision.objects.filter(config_type=ConfigType.NODE_POOL, created_at__lte=moment)
    # each node pool's last revision then, as one query that SQLite (make dev) runs too: no DISTINCT ON
    last = in_force.filter(name=OuterRef("name")).order_by("-revision").values("revision")[:1]
    rows = in_force.filter(name__in=list(today), revision=Subquery(last)).values_list(
        "name", "revision", "snapshot", "deleted"
    )
    snapshots = {name: (number, snapshot) for name, number, snapshot, deleted in rows if not deleted and snapshot}
    named = {
        kind: {team for _, snapshot in snapshots.values() for team in (snapshot.get(kind) or {})}
        for kind in ("departments", "projects")
    }
    facts = _teams(named["departments"], named["projects"])
    trees, revisions = dict(today), {name: None for name in today}
    for name, (number, snapshot) in snapshots.items():
        trees[name] = _tree(snapshot, today[name], facts)
        revisions[name] = number
    return TreesAt(trees, revisions)


def _teams(departments: set[str], projects: set[str]) -> dict[tuple[str, str], TeamQuota]:
    """Today's facts of the teams named: (kind, name) → a TeamQuota without quotas. Two queries."""
    found: dict[tuple[str, str], TeamQuota] = {}
    for name, created in Department.objects.filter(name__in=departments).values_list("name", "created_at"):
        found["departments", name] = TeamQuota(name, created=created.timestamp())
    rows = Project.objects.filter(name__in=projects).values_list("name", "department__name", "priority", "created_at")
    for name, department, priority, created in rows:
        found["projects", name] = TeamQuota(name, priority=priority, department=department, created=created.timestamp())
    return found


def _tree(snapshot: Mapping, today: QuotaTree, facts: Mapping[tuple[str, str], TeamQuota]) -> QuotaTree:
    teams = {}
    for kind, current in (("departments", today.departments), ("projects", today.projects)):
        quotas = snapshot.get(kind) or {}
        built = {team.name: dataclasses.replace(team, quotas=_quotas(quotas.get(team.name))) for team in current}
        for name, given in quotas.items():
            if name not in built and (kind, name) in facts:
                built[name] = dataclasses.replace(facts[kind, name], quotas=_quotas(given))
        teams[kind] = built
    departments = teams["departments"]
    for project in teams["projects"].values():  # a department with zero quotas is in no snapshot
        if project.department not in departments:
            departments[project.department] = facts.get(("departments", project.department)) or TeamQuota(
                project.department
            )
    return QuotaTree(
        tuple(departments[name] for name in sorted(departments)),
        tuple(teams["projects"][name] for name in sorted(teams["projects"])),
    )


def _quotas(given: Mapping | None) -> dict[str, Quota]:
    return {
        resource: Quota(
            deserved=int(quota.get("deserved") or 0),
            limit=None if quota.get("limit") is None else int(quota["limit"]),
            weight=int(quota.get("weight", 1)),
            lend=bool(quota.get("lend", True)),
        )
        for resource, quota in (given or {}).items()
        if isinstance(quota, Mapping)
    }
