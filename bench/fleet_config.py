"""The fleet's configuration (issue #36), written through the portal's own doors: backends, pod templates,
pools and platforms, machine pools, departments and projects, node pools with their quotas, users and their
roles; and the backends' nodes through the inventory (`clusters.inventory.write_nodes`, so membership and
node pools are computed as a sync computes them). The history is bench/fleet.py's (bulk COPY).

Every count comes from a `Shape` (bench/fleet.py: `shape(scale)`).
"""

from __future__ import annotations

from dataclasses import dataclass

ACTOR_NAME = "fleet-generator"
# GPU machine pools of every backend (kubesim.fleet.MACHINE_POOLS' names), nodes per 2,500, and the rest are "cpu"
GPU_GROUPS = {"h100": 20, "a100": 20, "gb200": 10, "l40s": 40, "t4-spot": 100}
PLATFORM_SETS = (  # the 3 platforms of a backend's k-th pool
    ("h100", "a100", "cpu"),
    ("a100", "l40s", "cpu"),
    ("l40s", "t4-spot", "cpu"),
    ("h100", "gb200", "l40s"),
    ("t4-spot", "a100", "cpu"),
)
RESEARCHERS_ROLE = "fleet-researchers"


@dataclass
class FleetConfig:
    backends: list[str]
    pools: list[tuple[str, str, tuple[str, ...]]]  # (pool, backend, platforms)
    node_pools: dict[tuple[str, str], str]  # (backend, machine pool) -> node pool name
    projects: list[tuple[int, str, str]]  # (pk, name, department)
    users: list[int]  # user pks
    user_projects: dict[int, list[int]]  # user pk -> indexes into projects
    instance_types: dict[str, str]  # machine pool -> instance type


def admin_user():
    """The fleet's administrator (a superuser), made when missing."""
    from django.contrib.auth import get_user_model

    user, created = get_user_model().objects.get_or_create(username="fleet-admin", defaults={"is_staff": True})
    if created:
        user.is_superuser = True
        user.set_unusable_password()
        user.save()
    if not user.groups.filter(name="osmo-admin").exists():  # the admin console is the policy's (osmo-admin)
        from django.contrib.auth.models import Group

        from access import epoch

        user.groups.add(Group.objects.get(name="osmo-admin"))
        epoch.bump()
    return user


def backend_name(b: int) -> str:
    return f"fleet-{b:02d}"


def group_sizes(nodes_per_backend: int) -> dict[str, int]:
    """Nodes per machine pool of one backend: the GPU groups in their proportion of 2,500 (at least 1), cpu the rest."""
    sizes = {name: max(1, round(count * nodes_per_backend / 2500)) for name, count in GPU_GROUPS.items()}
    sizes["cpu"] = max(1, nodes_per_backend - sum(sizes.values()))
    return sizes


def build(shape, *, kubesim_url: str = "http://127.0.0.1:8001") -> FleetConfig:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.db import transaction

    from access import epoch
    from access.services import roles
    from clusters.machinepools import reconcile
    from configs import store
    from configs.revisions import Actor
    from kubesim.fleet import MACHINE_POOL_LABEL, MACHINE_POOLS, node_manifest
    from pools.engine import default_templates, default_validations
    from teams import services as teams
    from teams.models import Project

    actor = Actor(name=ACTOR_NAME, source="cli")
    roles.ensure_builtin_roles()
    backends = [backend_name(b) for b in range(shape.backends)]
    # Connected last (below): until then nothing the generator writes talks to a cluster (a node-pool label
    # patch, say), whatever listens on the simulated clusters' port.
    documents = {
        name: {
            "description": f"fleet cluster {name} (simulated: kubesim at /clusters/{name})",
            "namespace": "osmo-workflows",
        }
        for name in backends
    }
    store.apply_many("BACKEND", documents, actor)
    templates = default_templates()
    for group in MACHINE_POOLS:
        spec = {"nodeSelector": {MACHINE_POOL_LABEL: group}}
        if MACHINE_POOLS[group][0]:
            spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        if MACHINE_POOLS[group][7]:
            spec.setdefault("tolerations", []).append(
                {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"}
            )
        templates[f"mp-{group}"] = {"spec": spec}
    store.apply_many("POD_TEMPLATE", templates, actor)
    store.apply_many("RESOURCE_VALIDATION", default_validations(), actor)

    pools, pool_documents = [], {}
    for p in range(shape.pools):
        backend = backends[p % len(backends)]
        platforms = PLATFORM_SETS[(p // len(backends)) % len(PLATFORM_SETS)][: shape.platforms_per_pool]
        name = f"{backend}-team-{p // len(backends):02d}"
        pools.append((name, backend, platforms))
        pool_documents[name] = {
            "description": f"fleet pool {p} on {backend}",
            "backend": backend,
            "default_platform": platforms[0],
            "common_default_variables": {"USER_CPU": 8, "USER_GPU": 1, "USER_MEMORY": "64Gi", "USER_STORAGE": "100Gi"},
            "common_resource_validations": ["default_cpu", "default_memory"],
            "common_pod_template": ["default_user", "default_ctrl"],
            "default_exec_timeout": "2d",
            "max_exec_timeout": "7d",
            "platforms": {
                platform: {
                    "description": f"{platform} nodes",
                    "override_pod_template": [f"mp-{platform}"],
                    "default_variables": {"USER_GPU": 0} if platform == "cpu" else {},
                }
                for platform in platforms
            },
        }
    store.apply_many("POOL", pool_documents, actor)

    # Machine pools: each backend's spot T4 group is a machine pool of its own (export only: no provider here)
    with reconcile.passes_deferred():
        store.apply_many(
            "MACHINE_POOL",
            {
                f"{backend}-t4-spot": {
                    "backend": backend,
                    "description": "spot T4 workers",
                    "instance_type": "g4dn.xlarge",
                    "autoscaling": {"min_replicas": 0, "max_replicas": 200},
                    "labels": {"fleet/group": "t4-spot"},
                    "spot": True,
                }
                for backend in backends[::2]
            },
            actor,
        )

    # Teams
    departments = [f"dept-{d:02d}" for d in range(shape.departments)]
    for name in departments:
        teams.create_department(name, actor, description="fleet department")
    project_names = [
        f"{departments[i % len(departments)]}-proj-{i // len(departments):02d}" for i in range(shape.projects)
    ]
    for i, name in enumerate(project_names):
        teams.create_project(name, departments[i % len(departments)], actor)
    by_name = dict(Project.objects.values_list("name", "pk"))
    projects = [(by_name[name], name, departments[i % len(departments)]) for i, name in enumerate(project_names)]

    # Users: all may use every pool (the catalog's worst case), each a member of one to three projects
    store.apply(
        "ROLE",
        RESEARCHERS_ROLE,
        {
            "description": "fleet researchers: every pool",
            "policies": [{"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/*"]}],
        },
        actor,
    )
    user_model = get_user_model()
    with transaction.atomic():
        user_model.objects.bulk_create(
            [
                user_model(username=f"user{u:05d}", email=f"user{u:05d}@fleet.example", password="!")
                for u in range(shape.users)
            ],
            batch_size=2000,
        )
        users = list(user_model.objects.filter(username__startswith="user").order_by("pk").values_list("pk", flat=True))
        groups = dict(Group.objects.values_list("name", "pk"))
        membership = user_model.groups.through
        user_projects, rows = {}, []
        for u, pk in enumerate(users):
            mine = [(u * 7 + j * 131) % len(projects) for j in range(1 + u % 3)]
            user_projects[pk] = mine
            names = {"osmo-user", RESEARCHERS_ROLE, *(f"osmo-{projects[i][1]}" for i in mine)}
            rows.extend(membership(user_id=pk, group_id=groups[n]) for n in names)
        membership.objects.bulk_create(rows, batch_size=5000)
    admin_user()
    epoch.bump()

    # Nodes, through the inventory (membership of platforms and node pools computed as a sync does)
    node_pools = _nodes_and_node_pools(shape, backends, projects, actor, store, node_manifest, MACHINE_POOL_LABEL)
    store.apply_many(
        "BACKEND",
        {name: {**body, "api_url": f"{kubesim_url}/clusters/{name}"} for name, body in documents.items()},
        actor,
    )
    instance_types = {group: MACHINE_POOLS[group][4] for group in MACHINE_POOLS}
    return FleetConfig(backends, pools, node_pools, projects, users, user_projects, instance_types)


def _nodes_and_node_pools(shape, backends, projects, actor, store, node_manifest, label) -> dict:
    from django.db import transaction

    from clusters.inventory import PodIndex, write_nodes
    from clusters.kube.node_pod_lists import node_record
    from clusters.models import Backend

    sizes = group_sizes(shape.nodes_per_backend)
    ids = dict(Backend.objects.filter(name__in=backends).values_list("name", "pk"))
    for backend in backends:
        records = []
        for group, count in sizes.items():
            for i in range(count):
                raw = node_manifest(group, i, name=f"{backend}-{group}-{i:04d}")
                records.append(node_record(raw))
        with transaction.atomic():
            write_nodes(ids[backend], records, PodIndex(), complete=True)
    # Node pools: one per GPU group of each backend (chosen by the machine-pool label), first `shape.node_pools`
    groups = list(GPU_GROUPS)
    wanted = [(backend, group) for backend in backends for group in groups][: shape.node_pools]
    node_pools, documents = {}, {}
    for n, (backend, group) in enumerate(wanted):
        name = f"{backend}-{group}"
        node_pools[(backend, group)] = name
        gpus = sizes[group] * {"h100": 8, "a100": 8, "gb200": 4, "l40s": 4, "t4-spot": 1}[group]
        owners = [p for p in range(len(projects)) if p % 10 == n % 10]
        each = (gpus * 8 // 10) // max(1, len(owners))
        departments: dict[str, int] = {}
        for p in owners:
            departments[projects[p][2]] = departments.get(projects[p][2], 0) + each
        documents[name] = {
            "backend": backend,
            "departments": {d: {"gpu": {"deserved": total}} for d, total in departments.items()},
            "description": f"{group} nodes of {backend}",
            "selector": {"label": {"key": label, "value": group}},
            "over_quota": True,
            "projects": {
                projects[p][1]: {
                    "gpu": {"deserved": each, "weight": 2}
                    if p % 10 == n % 10
                    else {"deserved": 0, "weight": 1 + p % 3, "limit": max(1, gpus // 4)}
                }
                for p in range(len(projects))
            },
        }
    store.apply_many("NODE_POOL", documents, actor)
    return node_pools
