"""Team quotas: set one (through the config store, one NODE_POOL revision), read a node pool's tree, and the
zero rows a new department or project gets in every node pool.

The doors (CLI `quota set`, REST) call `set_quota`/`set_quotas`, the admin grid `set_team_quotas` (every team it
changed, one revision); they pass `who` (a
request, user, token or principal) for the authorization (config:Update on `config/node_pool`, decided by
`access.policy`) and for the revision's author.
"""

from __future__ import annotations

import copy

from django.db import transaction

from access import actions, policy
from configs import store
from configs.errors import ConfigError, ConfigNotFound
from configs.models import ConfigType
from configs.revisions import Actor
from quotas.config_types import DEFAULT_QUOTA, QUOTA_KEYS, RESOURCES, ZERO, parse_quota
from quotas.models import NodePool, Quota
from teams.models import Department, Project

TEAM_KINDS = {"department": "departments", "project": "projects"}
UNSET = object()


def require_quota_write(who) -> None:
    """config:Update on `config/node_pool`: what writing a quota takes (None = the system itself)."""
    if who is not None:
        policy.require(
            who, actions.CONFIG_UPDATE, actions.config(ConfigType.NODE_POOL), refusal="may not change quotas"
        )


def set_quota(
    who,
    node_pool: NodePool | str,
    team_kind: str,
    team_name: str,
    resource: str,
    *,
    deserved=UNSET,
    limit=UNSET,
    weight=UNSET,
    lend=UNSET,
    actor: Actor | None = None,
    description: str = "",
):
    """Set one team's quota of one resource in one node pool; values not given keep their current value
    (`limit=None` removes the limit; `lend=False`: never lend its unused deserved). Amounts: integers in
    scheduler units or quantities ("500m", "64Gi"). Returns the store's ApplyResult (its `revision`)."""
    given = {
        key: value for key, value in zip(QUOTA_KEYS, (deserved, limit, weight, lend), strict=True) if value is not UNSET
    }
    return set_quotas(who, node_pool, team_kind, team_name, {resource: given}, actor=actor, description=description)


def set_quotas(
    who,
    node_pool: NodePool | str,
    team_kind: str,
    team_name: str,
    changes: dict[str, dict],
    *,
    actor: Actor | None = None,
    description: str = "",
    note: str = "",
):
    """Several resources of one team at once (`{"gpu": {"deserved": 8}, "memory": {"limit": "64Gi"}}`), as one
    revision. Raises ConfigError (field/value/reason; a value's field is `gpu.limit`), ConfigNotFound, or the
    policy's refusal. The revision's description is `description`, else what changed, followed by `note`."""
    return _write(who, node_pool, {(team_kind, team_name): changes}, actor, description, note, prefixed=False)


def set_team_quotas(
    who,
    node_pool: NodePool | str,
    teams: dict[tuple[str, str], dict[str, dict]],
    *,
    actor: Actor | None = None,
    description: str = "",
    note: str = "",
):
    """Several teams' quotas in one node pool (`{("project", "vision"): {"gpu": {"deserved": 8}}, …}`) as ONE
    NODE_POOL revision: the admin grid's save, so an applied preview is one entry in the history, whose diff holds
    every team changed and whose rollback undoes all of it. The document is checked as a whole (a department
    lowered with its projects needs no order); a value's error names its path (`projects.vision.gpu.limit`)."""
    return _write(who, node_pool, teams, actor, description, note, prefixed=True)


def _write(who, node_pool, teams: dict, actor: Actor | None, description: str, note: str, *, prefixed: bool):
    require_quota_write(who)
    name = node_pool if isinstance(node_pool, str) else node_pool.name
    if not isinstance(teams, dict) or not teams:
        raise ConfigError("name at least one team to set", field="teams", value=teams)
    for team_kind, team_name in teams:
        _section(team_kind)
        _check_team(team_kind, team_name)
    with transaction.atomic():
        try:
            document = store.show(ConfigType.NODE_POOL, name)
        except ConfigNotFound:
            raise ConfigNotFound("unknown node pool", field="node_pool", value=name) from None
        said = []
        for (team_kind, team_name), changes in sorted(teams.items()):
            section = _section(team_kind)
            try:
                document[section][team_name] = _merged(document[section].get(team_name, {}), changes)
            except ConfigError as error:
                if not prefixed:
                    raise
                at = f"{section}.{team_name}.{error.field}"
                raise ConfigError(error.reason, field=at, value=error.value) from None
            said.append((team_kind, team_name, ", ".join(f"{r} {_said(v)}" for r, v in changes.items())))
        if len(said) == 1:
            said_all = f"quota of {said[0][0]} {said[0][1]} in {name}: {said[0][2]}"
        else:
            said_all = f"quotas in {name}: " + "; ".join(f"{kind} {team} {text}" for kind, team, text in said)
        return store.apply(
            ConfigType.NODE_POOL,
            name,
            document,
            actor or _actor(who),
            description=(description or said_all) + (f"; {note}" if note else ""),
        )


def _merged(entry: dict, changes) -> dict:
    """A team's quotas in a document with `changes` ({resource: values}) set over them, each parsed."""
    if not isinstance(changes, dict) or not changes:
        raise ConfigError("name at least one resource to set", field="resource", value=changes)
    entry = copy.deepcopy(entry)
    for resource, values in changes.items():
        if resource not in RESOURCES:
            raise ConfigError(
                f"unknown resource; expected one of {', '.join(RESOURCES)}", field="resource", value=resource
            )
        if not isinstance(values, dict):
            raise ConfigError("must be an object of deserved, limit, weight, lend", field=resource, value=values)
        merged = {**entry.get(resource, ZERO), **values}
        entry[resource] = parse_quota(resource, merged, resource)  # field/value/reason before the store's
    return entry


def _said(values: dict) -> str:
    return " ".join(f"{key}={values[key]}" for key in QUOTA_KEYS if key in values)


def _section(team_kind: str) -> str:
    if team_kind not in TEAM_KINDS:
        raise ConfigError("must be department or project", field="team_kind", value=team_kind)
    return TEAM_KINDS[team_kind]


def _check_team(team_kind: str, team_name: str) -> None:
    model = Department if team_kind == "department" else Project
    if not model.objects.filter(name=team_name).exists():
        raise ConfigError(f"unknown {team_kind}", field=team_kind, value=team_name)


def _actor(who) -> Actor:
    if who is None:
        from access.services.audit import SYSTEM

        return SYSTEM
    subject = policy.principal(who)
    user = subject.user if subject.user.is_authenticated else None
    remote = subject.request.META.get("REMOTE_ADDR") if subject.request is not None else None
    return Actor.of(user, subject.door or "cli", remote)


# --- reading ---------------------------------------------------------------------------------------------


def quotas_of(node_pool: NodePool | str) -> dict:
    """A node pool's quota tree, every department and project (zeros included), per resource:

        {"node_pool": "gpu-a100", "backend": "sim", "over_quota": true,
         "departments": [{"name": "research",
                          "quotas": {"gpu": {"deserved": 16, "limit": None, "weight": 1, "lend": True}, ...},
                          "projects": [{"name": "vision", "priority": 0, "quotas": {...}}]}]}

    Departments and projects sorted by name. Two queries."""
    if isinstance(node_pool, str):
        try:
            node_pool = NodePool.objects.select_related("backend").get(name=node_pool)
        except NodePool.DoesNotExist:
            raise ConfigNotFound("unknown node pool", field="node_pool", value=node_pool) from None
    rows = Quota.objects.filter(node_pool=node_pool).select_related("department", "project__department")
    departments: dict[str, dict] = {}
    projects: dict[str, dict] = {}

    def department(name: str) -> dict:
        return departments.setdefault(name, {"name": name, "quotas": _zeros(), "projects": []})

    for row in rows:
        figures = {"deserved": row.deserved, "limit": row.limit, "weight": row.weight, "lend": row.lend}
        if row.department_id:
            department(row.department.name)["quotas"][row.resource] = figures
        else:
            project = projects.get(row.project.name)
            if project is None:
                project = projects[row.project.name] = {
                    "name": row.project.name,
                    "priority": row.project.priority,
                    "quotas": _zeros(),
                }
                department(row.project.department.name)["projects"].append(project)
            project["quotas"][row.resource] = figures
    tree = [departments[name] for name in sorted(departments)]
    for entry in tree:
        entry["projects"].sort(key=lambda project: project["name"])
    return {
        "node_pool": node_pool.name,
        "backend": node_pool.backend.name,
        "over_quota": node_pool.over_quota,
        "departments": tree,
    }


def _zeros() -> dict:
    return {resource: dict(DEFAULT_QUOTA) for resource in RESOURCES}


# --- zero rows -----------------------------------------------------------------------------------------


def give_zero_quotas(*, department: Department | None = None, project: Project | None = None) -> int:
    """A new team gets the zero quota in every node pool (every resource); rows already there stay."""
    team = {"department": department} if department is not None else {"project": project}
    rows = [
        Quota(node_pool_id=pk, resource=resource, **team, **ZERO)
        for pk in NodePool.objects.values_list("pk", flat=True)
        for resource in RESOURCES
    ]
    return len(Quota.objects.bulk_create(rows, ignore_conflicts=True))
