"""The portal's configuration for the run, written by the test process: a backend on the simulated cluster,
a pool on it, a researcher with an API token."""

from __future__ import annotations

NAMESPACE = "scale-jobs"
POOL = "scale"


def configure(kubesim_url: str) -> str:
    """Backend, templates, pool and a researcher; returns the researcher's API token."""
    from access.services import roles, tokens
    from clusters import inventory
    from clusters.models import Backend
    from configs import store
    from configs.revisions import Actor
    from pools.engine import default_templates
    from tests.factories import RoleFactory, UserFactory

    actor = Actor(name="scale-test", source="cli")
    store.apply("BACKEND", "sim", {"description": "scale", "namespace": NAMESPACE, "api_url": kubesim_url}, actor)
    store.apply_many(
        "POD_TEMPLATE",
        {
            "default_user": default_templates()["default_user"],
            "cpu": {"spec": {"nodeSelector": {"hive.openshift.io/machine-pool": "cpu"}}},
        },
        actor,
    )
    store.apply(
        "POOL",
        POOL,
        {
            "backend": "sim",
            "default_platform": "cpu",
            "common_pod_template": ["default_user"],
            "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
            "platforms": {"cpu": {"override_pod_template": ["cpu"]}},
        },
        actor,
    )
    inventory.sync_backend(Backend.objects.get(name="sim").pk)
    user = UserFactory(username="researcher")
    rights = {"effect": "Allow", "actions": ["workflow:*"], "resources": ["pool/scale*"]}
    RoleFactory(name="osmo-scale", policies=[rights])
    roles.update_user_roles(user, add=["osmo-scale", "osmo-user"], actor=actor)
    return tokens.create(user, "scale").secret


def tasks_of(index: int) -> int:
    """Workflow `index` has one task, or two for every tenth (several pods per workflow)."""
    return 2 if index % 10 == 0 else 1


def spec(index: int) -> str:
    tasks = tasks_of(index)
    items = "\n".join(
        f"  - {{name: t{i}, image: 'busybox:1.36', command: [sh, -c, 'echo {index}']}}" for i in range(tasks)
    )
    return (
        f"version: 2\nworkflow:\n  name: scale-{index}\n"
        "  resources:\n    default: {cpu: 0.1, memory: 64Mi, storage: 64Mi}\n"
        f"  tasks:\n{items}\n"
    )


def database_url(settings_dict: dict) -> str:
    """The URL of the database the test runs on, for the processes it starts."""
    user = settings_dict.get("USER") or ""
    password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{user}{password}@{host}:{port}/{settings_dict['NAME']}"
