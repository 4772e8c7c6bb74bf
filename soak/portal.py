"""The portal's configuration for a run, written through its services (Django set up by the caller; apps are
imported inside the functions): backends on simulated clusters, pools on them, teams with quotas, researchers
and an administrator with API tokens.

`configure_scale`: the scale proof and the pipeline bench (one backend `sim`, pool `scale`, one researcher).
`configure_soak`: the soak (one backend, pool and node pool per cluster; two departments, three projects with
CPU quotas in every node pool; a researcher per project and an administrator).
"""

from __future__ import annotations

from dataclasses import dataclass

NAMESPACE = "scale-jobs"
POOL = "scale"
MACHINE_POOL_LABEL = "hive.openshift.io/machine-pool"
# the soak's teams: department → project → deserved CPU (millicores) in each node pool (4 cpu nodes of 31.5 cores)
TEAMS = {"research": {"vision": 8000, "speech": 8000}, "ops": {"infer": 4000}}
DEPARTMENT_DESERVED = {"research": 16000, "ops": 4000}


def _actor():
    from configs.revisions import Actor

    return Actor(name="soak", source="cli")


def _templates(actor) -> None:
    from configs import store
    from pools.engine import default_templates

    cpu = {"spec": {"nodeSelector": {MACHINE_POOL_LABEL: "cpu"}}}
    store.apply_many("POD_TEMPLATE", {"default_user": default_templates()["default_user"], "cpu": cpu}, actor)


def _pool(name: str, backend: str, actor) -> None:
    from configs import store

    body = {
        "backend": backend,
        "default_platform": "cpu",
        "common_pod_template": ["default_user"],
        "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
        "platforms": {"cpu": {"override_pod_template": ["cpu"]}},
    }
    store.apply("POOL", name, body, actor)


def role(name: str, resources: list[str], actor) -> None:
    from configs import store

    policies = [{"effect": "Allow", "actions": ["workflow:*"], "resources": resources}]
    store.apply("ROLE", name, {"name": name, "description": "soak", "policies": policies}, actor)


def user_with_token(username: str, roles: list[str], actor, *, superuser: bool = False) -> str:
    """A user holding `roles` (a superuser holds osmo-admin); returns the secret of a new API token."""
    from django.contrib.auth import get_user_model

    from access.services import roles as role_service
    from access.services import tokens

    make = get_user_model().objects.create_superuser if superuser else get_user_model().objects.create_user
    user = make(username=username, email=f"{username}@example.com", password=None)
    if roles:
        role_service.update_user_roles(user, add=roles, actor=actor)
    return tokens.create(user, "soak").secret


def configure_scale(kubesim_url: str) -> str:
    """Backend `sim`, templates, pool `scale` and a researcher; returns the researcher's API token."""
    from access.services import roles
    from clusters import inventory
    from clusters.models import Backend
    from configs import store

    actor = _actor()
    roles.ensure_builtin_roles()
    store.apply("BACKEND", "sim", {"description": "scale", "namespace": NAMESPACE, "api_url": kubesim_url}, actor)
    _templates(actor)
    _pool(POOL, "sim", actor)
    inventory.sync_backend(Backend.objects.get(name="sim").pk)
    role("osmo-scale", ["pool/scale*"], actor)
    return user_with_token("researcher", ["osmo-scale", "osmo-user"], actor)


@dataclass
class SoakPortal:
    admin_token: str
    tokens: dict[str, str]  # project → its researcher's token
    pools: list[str]
    node_pools: list[str]


def configure_soak(clusters: dict[str, str]) -> SoakPortal:
    """`clusters`: name → API URL. Per cluster: backend `<name>`, pool `p<name>`, node pool `<name>-cpu` (its
    cpu nodes) with every team's CPU quota (over quota allowed: work above deserved runs preemptible)."""
    from access.services import roles
    from clusters import inventory
    from clusters.models import Backend
    from configs import store
    from teams import services as teams

    actor = _actor()
    roles.ensure_builtin_roles()
    _templates(actor)
    for department, projects in TEAMS.items():
        teams.create_department(department, actor)
        for project in projects:
            teams.create_project(project, department, actor)
    role("osmo-soak", ["pool/*"], actor)
    pools, node_pools = [], []
    for name, url in clusters.items():
        store.apply("BACKEND", name, {"description": "soak", "namespace": "soak-jobs", "api_url": url}, actor)
        _pool(f"p{name}", name, actor)
        inventory.sync_backend(Backend.objects.get(name=name).pk)
        document = {
            "backend": name,
            "selector": {"label": {"key": MACHINE_POOL_LABEL, "value": "cpu"}},
            "over_quota": True,
            "departments": {d: {"cpu": {"deserved": DEPARTMENT_DESERVED[d]}} for d in TEAMS},
            "projects": {p: {"cpu": {"deserved": m}} for projects in TEAMS.values() for p, m in projects.items()},
        }
        store.apply("NODE_POOL", f"{name}-cpu", document, actor)
        pools.append(f"p{name}")
        node_pools.append(f"{name}-cpu")
    tokens = {
        project: user_with_token(f"{project}-user", ["osmo-soak", f"osmo-{project}", "osmo-user"], actor)
        for projects in TEAMS.values()
        for project in projects
    }
    admin = user_with_token("soak-admin", [], actor, superuser=True)
    return SoakPortal(admin, tokens, pools, node_pools)


def tasks_of(index: int) -> int:
    """Workflow `index` has one task, or two for every tenth (several pods per workflow)."""
    return 2 if index % 10 == 0 else 1


def spec(index: int, *, cpu: float = 0.1, name: str = "scale") -> str:
    tasks = tasks_of(index)
    items = "\n".join(
        f"  - {{name: t{i}, image: 'busybox:1.36', command: [sh, -c, 'echo {index}']}}" for i in range(tasks)
    )
    return (
        f"version: 2\nworkflow:\n  name: {name}-{index}\n"
        f"  resources:\n    default: {{cpu: {cpu}, memory: 64Mi, storage: 64Mi}}\n"
        f"  tasks:\n{items}\n"
    )


def database_url(settings_dict: dict) -> str:
    """The URL of the database the caller runs on, for the processes it starts."""
    user = settings_dict.get("USER") or ""
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"
