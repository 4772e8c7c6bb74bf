"""The quota grid as Run:ai shows it: projects (grouped under their departments) × node pools, each cell the
deserved GPUs, opening to the team's CPU and memory, its limits and weights; each project row with its
priority. Read-only: a cell links to its node pool's editable grid (quotas.admin_grid), a project to its
admin page (priority). Four queries whatever the number of node pools, teams and quotas.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from quotas import units
from quotas.config_types import RESOURCES, ZERO
from quotas.models import NodePool, Quota
from quotas.services.grid import RESOURCE_WORDS
from teams.models import Department, Project


@dataclass
class Cell:
    node_pool_id: int
    gpus: str  # deserved GPUs, as the cell shows them
    details: list[str] = field(default_factory=list)  # per resource: deserved, limit, weight, in words
    guaranteed: bool = False  # any deserved quota or limit here


@dataclass
class Row:
    kind: str  # department or project
    pk: int
    name: str
    priority: int | None  # projects only
    cells: list[Cell]


@dataclass
class ProjectGrid:
    node_pools: list[dict]  # {pk, name, backend}
    rows: list[Row]


def project_grid() -> ProjectGrid:
    """Every department, then its projects, × every node pool (ordered by backend, then name)."""
    node_pools = list(NodePool.objects.order_by("backend__name", "name").values("pk", "name", "backend__name"))
    quotas: dict[tuple[str, int, int], dict] = {}
    rows = Quota.objects.values_list(
        "node_pool_id", "department_id", "project_id", "resource", "deserved", "limit", "weight"
    )
    for node_pool_id, department_id, project_id, resource, deserved, limit, weight in rows:
        team = ("department", department_id) if department_id else ("project", project_id)
        quotas.setdefault((*team, node_pool_id), {})[resource] = {
            "deserved": deserved,
            "limit": limit,
            "weight": weight,
        }
    projects: dict[int, list[dict]] = {}
    for project in Project.objects.order_by("name").values("pk", "name", "department_id", "priority"):
        projects.setdefault(project["department_id"], []).append(project)
    grid_rows = []
    for department in Department.objects.order_by("name").values("pk", "name"):
        grid_rows.append(_row("department", department, None, node_pools, quotas))
        for project in projects.get(department["pk"], []):
            grid_rows.append(_row("project", project, project["priority"], node_pools, quotas))
    return ProjectGrid(
        [{"pk": p["pk"], "name": p["name"], "backend": p["backend__name"]} for p in node_pools], grid_rows
    )


def _row(kind: str, team: dict, priority: int | None, node_pools: list[dict], quotas: dict) -> Row:
    cells = [_cell(node_pool["pk"], quotas.get((kind, team["pk"], node_pool["pk"]), {})) for node_pool in node_pools]
    return Row(kind, team["pk"], team["name"], priority, cells)


def _cell(node_pool_id: int, quotas: dict) -> Cell:
    details, guaranteed = [], False
    for resource in RESOURCES:
        quota = quotas.get(resource, ZERO)
        guaranteed = guaranteed or quota["deserved"] > 0 or quota["limit"] is not None
        limit = "no limit" if quota["limit"] is None else f"limit {units.show(resource, quota['limit'])}"
        details.append(
            f"{RESOURCE_WORDS[resource]}: deserved {units.show(resource, quota['deserved'])}, {limit}, "
            f"weight {quota['weight']}"
        )
    gpus = units.show("gpu", quotas.get("gpu", ZERO)["deserved"])
    return Cell(node_pool_id, gpus, details, guaranteed)
