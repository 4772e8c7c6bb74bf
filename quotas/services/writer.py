"""Writing one NODE_POOL document: the checks that need the database, then the node pool row and its quota
rows (every department and project × every resource, zero where the document says nothing).

Called by the NODE_POOL handler (quotas.config_handlers) inside `configs.store`'s transaction, so a refused
document leaves nothing behind. Queries per batch: backends, departments, projects, the pools platform
selectors name (`References.load`); per node pool: its row, one bulk insert and one bulk update of quotas.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models.fields.json import KeyTransform

from clusters.config_handlers import backend_of
from clusters.models import Backend, Node
from configs.errors import ConfigError
from configs.schema import Doc
from pools.models import Pool
from quotas.config_types import NODE_POOL, RESOURCES, ZERO, Selector
from quotas.models import DEFAULT_SUFFIX, NodePool, NodePoolMember, Quota, SelectorKind, default_name
from quotas.services.node_pools import NODE_POOL_LABEL
from teams.models import Department, Project

PORTAL_PREFIX = "pool-portal/"
SELECTOR = Selector()


@dataclass
class References:
    """What a batch of documents refers to, loaded once."""

    backends: dict[str, Backend]
    departments: dict[str, Department]
    projects: dict[str, Project]
    pools: dict[str, Pool]

    @classmethod
    def load(cls, docs: list[Doc]) -> References:
        pool_names = {doc.selector["pool"] for doc in docs if doc.selector["kind"] == "platform"}
        return cls(
            backends={b.name: b for b in Backend.objects.filter(name__in={doc.backend for doc in docs})},
            departments={d.name: d for d in Department.objects.all()},
            projects={p.name: p for p in Project.objects.all()},
            pools={
                p.name: p
                for p in Pool.objects.filter(name__in=pool_names)
                .select_related("backend")
                .prefetch_related("platforms")
            },
        )


def save_node_pool(doc: Doc, existing: NodePool | None, refs: References) -> NodePool:
    backend = backend_of(doc, existing, refs.backends, "node pool")
    _check_selector(doc, backend, refs)
    wanted = _wanted_quotas(doc, refs)
    _check_overlap_of_a_new_selector(doc, existing, backend)
    node_pool = existing or NodePool(name=doc.name)
    NODE_POOL.write(doc, node_pool)
    node_pool.backend = backend
    selector = doc.selector
    node_pool.selector_kind = selector["kind"]
    node_pool.label_key = selector.get("key", "")
    node_pool.label_value = selector.get("value", "")
    node_pool.pool_name = selector.get("pool", "")
    node_pool.platform_name = selector.get("platform", "")
    node_pool.save()
    _write_quotas(node_pool, list(existing.quotas.all()) if existing else [], wanted, refs)
    return node_pool


def check_selector(doc: Doc, existing: NodePool | None, refs: References) -> Backend:
    """The checks of a document's backend and selector that need the database (the Default's rules, the portal's
    own labels, the platform, nodes another node pool holds), as `save_node_pool` runs them; writes nothing. The
    admin form's preview runs them, so it refuses at the field what the save would."""
    backend = backend_of(doc, existing, refs.backends, "node pool")
    _check_selector(doc, backend, refs)
    _check_overlap_of_a_new_selector(doc, existing, backend)
    return backend


def _check_overlap_of_a_new_selector(doc: Doc, existing: NodePool | None, backend: Backend) -> None:
    if doc.selector["kind"] != SelectorKind.DEFAULT and (
        existing is None or SELECTOR.read(existing, "selector") != doc.selector
    ):
        _check_overlap(doc, backend)


def _check_selector(doc: Doc, backend: Backend, refs: References) -> None:
    kind, the_default = doc.selector["kind"], default_name(backend.name)
    if doc.name == the_default and kind != SelectorKind.DEFAULT:
        raise ConfigError(
            f"{the_default} is the Default node pool of backend {backend.name}: it holds every node no other node "
            "pool claims and cannot be given a selector; create another node pool with this selector",
            field="selector",
            value=kind,
        )
    if kind == SelectorKind.DEFAULT and doc.name != the_default:
        raise ConfigError(
            f"only the Default node pool ({the_default}) selects no nodes; give a label "
            '({"label": {"key": …, "value": …}}) or a platform ({"platform": {"pool": …, "platform": …}})',
            field="selector",
            value={},
        )
    if kind != SelectorKind.DEFAULT and doc.name.endswith(DEFAULT_SUFFIX):
        raise ConfigError(
            f"names ending in {DEFAULT_SUFFIX} are kept for the backends' Default node pools",
            field="name",
            value=doc.name,
        )
    if kind == SelectorKind.PLATFORM:
        _check_platform(doc.selector, backend, refs)
    if kind == SelectorKind.LABEL and doc.selector["key"].startswith(PORTAL_PREFIX):
        raise ConfigError(
            f"labels under {PORTAL_PREFIX} are the portal's own (it sets {NODE_POOL_LABEL} on nodes from the node "
            "pools themselves); select nodes by a label of your own",
            field="selector.label.key",
            value=doc.selector["key"],
        )


def _check_overlap(doc: Doc, backend: Backend) -> None:
    """A new selector may claim no node another node pool of the backend selects too: the same label or
    platform, or nodes that already carry the other's label or are members of its platform (each node is in
    one node pool; a second pool over the same nodes would hold none of them and guarantee nothing)."""
    selector, others = doc.selector, NodePool.objects.filter(backend=backend).exclude(name=doc.name)
    if selector["kind"] == SelectorKind.LABEL:
        same = others.filter(label_key=selector["key"], label_value=selector["value"], selector_kind="label")
        # a key transform compared as JSON: not `labels__contains` (JSON containment is PostgreSQL's, and make dev
        # runs on SQLite), nor KT's text, which SQLite compares through JSON_EXTRACT of the bare value ("malformed
        # JSON", a 503 on saving a label node pool)
        carrying = KeyTransform(selector["key"], "labels")
        nodes = Node.objects.filter(backend=backend).annotate(carried=carrying).filter(carried=selector["value"])
    else:
        same = others.filter(pool_name=selector["pool"], platform_name=selector["platform"], selector_kind="platform")
        nodes = Node.objects.filter(
            backend=backend, memberships__pool__name=selector["pool"], memberships__platform__name=selector["platform"]
        )
    twin = same.first()
    if twin is not None:
        raise ConfigError(
            f"node pool {twin.name} already selects these nodes ({_said(selector)}); each node is in one node "
            f"pool: set quotas on {twin.name}, or choose a selector no other node pool matches",
            field="selector",
            value=SELECTOR.show(selector),
        )
    held = (
        NodePoolMember.objects.filter(node__in=nodes.values("pk"), node_pool__in=others)
        .exclude(node_pool__selector_kind=SelectorKind.DEFAULT)
        .values_list("node_pool__name", "node__name")
        .order_by("node_pool__name", "node__name")
    )
    found = held.first()
    if found is not None:
        holder, node = found
        count = held.filter(node_pool__name=holder).count()
        raise ConfigError(
            f"{_said(selector)} matches {count} node(s) node pool {holder} already holds (e.g. {node}); each node "
            f"is in one node pool: choose a selector that matches none of {holder}'s nodes, or change {holder}",
            field="selector",
            value=SELECTOR.show(selector),
        )


def _said(selector: dict) -> str:
    if selector["kind"] == SelectorKind.LABEL:
        return f"label {selector['key']}={selector['value']}"
    return f"platform {selector['platform']} of pool {selector['pool']}"


def _check_platform(selector: dict, backend: Backend, refs: References) -> None:
    pool = refs.pools.get(selector["pool"])
    if pool is None:
        raise ConfigError("unknown pool", field="selector.platform.pool", value=selector["pool"])
    if pool.backend_id != backend.pk:
        raise ConfigError(
            f"pool {pool.name} runs on backend {pool.backend.name}, not on this node pool's backend {backend.name}",
            field="selector.platform.pool",
            value=pool.name,
        )
    names = sorted(p.name for p in pool.platforms.all())
    if selector["platform"] not in names:
        raise ConfigError(
            f"is not a platform of pool {pool.name} (platforms: {', '.join(names) or 'none'})",
            field="selector.platform.platform",
            value=selector["platform"],
        )


def _wanted_quotas(doc: Doc, refs: References) -> dict[tuple[str, int, str], dict]:
    """(team kind, team id, resource) → {deserved, limit, weight[, lend]} for every team: the document's, else zero."""
    for kind, given, known in (
        ("departments", doc.departments, refs.departments),
        ("projects", doc.projects, refs.projects),
    ):
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise ConfigError(
                f"unknown {kind[:-1]}; create it first (`team create`)", field=f"{kind}.{unknown[0]}", value=unknown[0]
            )
    _check_coverage(doc, refs)
    wanted = {}
    for kind, given, known in (
        ("department", doc.departments, refs.departments),
        ("project", doc.projects, refs.projects),
    ):
        for name, team in known.items():
            for resource in RESOURCES:
                wanted[(kind, team.pk, resource)] = given.get(name, {}).get(resource, ZERO)
    return wanted


def _check_coverage(doc: Doc, refs: References) -> None:
    """A department's deserved covers the sum of its projects' deserved, per resource."""
    department_names = {d.pk: d.name for d in refs.departments.values()}
    sums: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for name, resources in doc.projects.items():
        department = department_names[refs.projects[name].department_id]
        for resource, quota in resources.items():
            if quota["deserved"]:
                sums.setdefault((department, resource), []).append((name, quota["deserved"]))
    for (department, resource), projects in sorted(sums.items()):
        total = sum(amount for _, amount in projects)
        deserved = doc.departments.get(department, {}).get(resource, ZERO)["deserved"]
        if deserved < total:
            listed = ", ".join(f"{name} {amount}" for name, amount in projects)
            raise ConfigError(
                f"department {department}'s deserved {resource} ({deserved}) is below the sum of its projects' "
                f"deserved {resource} ({total}: {listed}); raise the department's or lower its projects'",
                field=f"departments.{department}.{resource}.deserved",
                value=deserved,
            )


def _write_quotas(node_pool: NodePool, current: list[Quota], wanted: dict, refs: References) -> None:
    by_key = {
        ("department" if row.department_id else "project", row.department_id or row.project_id, row.resource): row
        for row in current
    }
    fresh, changed = [], []
    for (kind, team_id, resource), quota in wanted.items():
        row = by_key.get((kind, team_id, resource))
        if row is None:
            fresh.append(Quota(node_pool=node_pool, **{f"{kind}_id": team_id}, resource=resource, **quota))
        else:
            figures = (quota["deserved"], quota["limit"], quota["weight"], quota.get("lend", True))
            if (row.deserved, row.limit, row.weight, row.lend) != figures:
                row.deserved, row.limit, row.weight, row.lend = figures
                changed.append(row)
    Quota.objects.bulk_create(fresh, batch_size=1000)
    Quota.objects.bulk_update(changed, ["deserved", "limit", "weight", "lend"], batch_size=500)
