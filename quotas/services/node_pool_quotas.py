"""What the quota doors show and take: the CLI (`node-pool list|show`, `quota show|set`), the REST API
(/api/quotas/node_pools…) and the admin grid all read these, so they can never disagree.

- `node_pool_rows(rows)`: per node pool its backend, selector, nodes, capacity, the departments' deserved sum,
  over-quota switch, managed, over-committed resources. Two queries whatever the number of node pools.
- `node_pool_detail(name, view)`: one node pool's row, its quota tree (departments with their quotas and
  projects) and, per project and resource, what `quota show` prints (quotas.services.state: deserved, limit,
  weight, allocated, queued, fair share, borrowed); of the teams `view` shows (teams.quota_visibility:
  a researcher's own, unless they may read every team's); and `time_based_fair_share`: null, or the node
  pool's window, half-life and k with, per resource, each shown team's weight before and after its usage
  (quotas.services.usage_weights). A constant number of queries whatever the number of teams.
- `set_team_quota(who, …)`: `quotas.set_quotas` for a door that names the team in its path: an unknown node
  pool or team is a 404 (`ConfigNotFound`); `replace=True` (REST PUT) sets every resource not given to zero.

Writes go through `quotas.services.quotas.set_quotas` (one NODE_POOL revision; config:Update on
`config/node_pool`).
"""

from __future__ import annotations

from django.db.models import QuerySet

from configs.errors import ConfigError, ConfigNotFound
from quotas.config_types import DEFAULT_QUOTA, QUOTA_KEYS, RESOURCES
from quotas.models import NodePool, SelectorKind
from quotas.services import node_pools, overview, state
from quotas.services.quotas import TEAM_KINDS, quotas_of, set_quotas
from quotas.services.usage_weights import Window, weight_rows
from teams.models import Department, Project
from teams.quota_visibility import EVERYTHING, QuotaView


def selector_text(node_pool: NodePool) -> str:
    """How a person reads the selector: `label k=v`, `platform pool/platform`, or the Default's."""
    if node_pool.selector_kind == SelectorKind.LABEL:
        return f"label {node_pool.label_key}={node_pool.label_value}"
    if node_pool.selector_kind == SelectorKind.PLATFORM:
        return f"platform {node_pool.pool_name}/{node_pool.platform_name}"
    return "Default (the nodes no other node pool claims)"


def selector_doc(node_pool: NodePool) -> dict:
    """The selector as the NODE_POOL document writes it."""
    if node_pool.selector_kind == SelectorKind.LABEL:
        return {"label": {"key": node_pool.label_key, "value": node_pool.label_value}}
    if node_pool.selector_kind == SelectorKind.PLATFORM:
        return {"platform": {"pool": node_pool.pool_name, "platform": node_pool.platform_name}}
    return {}


def _row(node_pool: NodePool, managed: bool) -> dict:
    """One node pool from `overview.with_totals`."""
    over = overview.overcommitted(node_pool)
    return {
        "name": node_pool.name,
        "backend": node_pool.backend.name,
        "selector": selector_doc(node_pool),
        "selector_text": selector_text(node_pool),
        "over_quota": node_pool.over_quota,
        "description": node_pool.description,
        "managed": managed,
        "nodes": node_pool.node_count,
        "empty": not node_pool.node_count,  # quotas here guarantee nothing until some node joins
        "capacity": {r: getattr(node_pool, f"capacity_{r}") for r in RESOURCES},
        "deserved": {r: getattr(node_pool, f"deserved_{r}") for r in RESOURCES},
        "overcommitted": bool(over),
        "overcommitted_resources": over,
    }


def all_node_pools() -> QuerySet[NodePool]:
    """Every node pool by name, its backend joined: what the list doors narrow (quotas.filters.NodePoolFilter)."""
    return NodePool.objects.select_related("backend").order_by("name")


def node_pool_rows(rows: QuerySet[NodePool] | None = None) -> list[dict]:
    """A row for each of `rows` (default: `all_node_pools()`), in its order. Two queries."""
    found = list(overview.with_totals(all_node_pools() if rows is None else rows))
    managed = node_pools.managed_ids(found)
    return [_row(node_pool, node_pool.pk in managed) for node_pool in found]


def get_node_pool(name: str) -> NodePool:
    found = NodePool.objects.select_related("backend").filter(name=name).first() if "\x00" not in name else None
    if found is None:
        raise ConfigNotFound("unknown node pool", field="node_pool", value=name)
    return found


def node_pool_detail(name: str, view: QuotaView = EVERYTHING) -> dict:
    """The node pool's row, `departments` (the quota tree: each with its quotas and its projects' names) and
    `projects` (per project and resource: deserved, limit, weight, priority, allocated, queued, fair_share,
    borrowed), of the teams `view` shows; the row's totals are the whole node pool's. `managed` and the
    figures come from one read of the live state."""
    [totals] = overview.with_totals(NodePool.objects.select_related("backend").filter(pk=get_node_pool(name).pk))
    live = state.state(totals)
    tree = quotas_of(totals)
    departments = [
        {
            "name": d["name"],
            "quotas": d["quotas"],
            "projects": [p["name"] for p in d["projects"] if view.shows_project(p["name"])],
        }
        for d in tree["departments"]
        if view.shows_department(d["name"])
    ]
    return {
        **_row(totals, live.managed),
        "departments": departments,
        "projects": [row for row in live.project_rows() if view.shows_project(row["project"])],
        "time_based_fair_share": _usage_weights(totals, live, view),
    }


def _usage_weights(node_pool: NodePool, live: state.NodePoolState, view: QuotaView) -> dict | None:
    """The node pool's window, and per resource each shown team's weight before and after its usage."""
    window = Window.of(node_pool)
    if window is None or live.history is None:
        return None

    def shown(row) -> bool:
        return view.shows_department(row.name) if row.kind == "department" else view.shows_project(row.name)

    return {
        **window.as_dict(),
        "text": window.text(),
        "weights": {
            resource: [row.as_dict() for row in weight_rows(live.tree, live.history, resource) if shown(row)]
            for resource in RESOURCES
        },
    }


# --- writing -------------------------------------------------------------------------------------------


def require_team(team_kind: str, name: str) -> None:
    """A door that names the team in its path: an unknown one is a 404."""
    if team_kind not in TEAM_KINDS:
        raise ConfigError("must be department or project", field="team_kind", value=team_kind)
    model = Department if team_kind == "department" else Project
    if "\x00" in name or not model.objects.filter(name=name).exists():
        raise ConfigNotFound(f"unknown {team_kind}", field=team_kind, value=name)


def set_team_quota(who, node_pool: str, team_kind: str, team_name: str, body, *, replace: bool, actor=None):
    """`body` = `{"gpu": {"deserved", "limit", "weight", "lend"}, …, "description"?}`. With `replace`, each
    resource is set whole (keys not given: deserved 0, no limit, weight 1, lend true) and resources not given go
    back to zero; otherwise only what is given changes. Returns the store's ApplyResult."""
    get_node_pool(node_pool)
    require_team(team_kind, team_name)
    if not isinstance(body, dict):
        raise ConfigError("must be an object of resources (gpu, cpu, memory)", field="body", value=body)
    changes = dict(body)
    description = changes.pop("description", "")
    if not isinstance(description, str):
        raise ConfigError("must be a string", field="description", value=description)
    if replace:
        for resource in RESOURCES:
            given = changes.get(resource, {})
            changes[resource] = {**DEFAULT_QUOTA, **given} if isinstance(given, dict) else given
    return set_quotas(who, node_pool, team_kind, team_name, changes, actor=actor, description=description)


def team_quotas(node_pool: str, team_kind: str, team_name: str) -> dict:
    """`{resource: {deserved, limit, weight, lend}}` of one team in one node pool (zeros included)."""
    model_field = "department__name" if team_kind == "department" else "project__name"
    rows = get_node_pool(node_pool).quotas.filter(**{model_field: team_name}).values_list("resource", *QUOTA_KEYS)
    found = {resource: dict(DEFAULT_QUOTA) for resource in RESOURCES}
    for resource, *values in rows:
        found[resource] = dict(zip(QUOTA_KEYS, values, strict=True))
    return found
