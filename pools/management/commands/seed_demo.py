"""Load the demo configuration idempotently: the seed documents' pools and everything they reference.

Applying unchanged documents writes nothing, so running it on every `make dev` is safe.
"""

from __future__ import annotations

import os
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from access.services import roles
from clusters.machinepools import reconcile
from configs import store
from configs.revisions import Actor
from pools.engine import default_templates, default_validations
from pools.models import Pool
from pools.services.machine_pool_platforms import make_platform
from portal.commands import PortalCommand
from portal.docfiles import load_document
from teams import services as teams
from teams.models import Department, Project

DEMO_PROJECTS = (
    ("robotics", "research", "demo data: the robotics team"),
    ("vision", "research", "demo data: the vision team"),
    ("inference", "ml-ops", "demo data: the inference team"),
)
# The pool of the demo's ROSA cluster: its platforms are made from the machine pools (docs/machine-pool-platforms.md)
SPOT_POOL = "robotics-spot"
SPOT_POOL_BODY = {
    "backend": "rosa-cluster-01",
    "description": "ROSA machine pools: T4 spot GPUs scaled from zero (up to 3) and batch workers",
    "common_default_variables": {"USER_CPU": 2, "USER_GPU": 0, "USER_MEMORY": "8Gi", "USER_STORAGE": "50Gi"},
    "common_resource_validations": ["default_cpu", "default_memory", "default_storage", "default_gpu"],
    "common_pod_template": ["default_amd64"],
    "default_exit_actions": {"RESCHEDULE": "3001"},  # a task whose spot node is reclaimed runs again elsewhere
}
SPOT_PLATFORMS = (("ml-training", "t4-spot", {"USER_GPU": 1}), ("additional", "batch", {}))
DEMO_DIR = Path(__file__).resolve().parents[2] / "demo"
LOAD_ORDER = (
    ("BACKEND", "backends.yaml"),
    ("MACHINE_POOL", "machine_pools.yaml"),
    ("POD_TEMPLATE", "pod_templates.yaml"),
    ("RESOURCE_VALIDATION", "resource_validations.yaml"),
    ("POOL", "pools.json"),
)


def demo_documents() -> list[tuple[str, dict]]:
    """Config documents in dependency order; OSMO's shipped templates and rules come from the engine."""
    loaded = {config_type: load_document(DEMO_DIR / filename) for config_type, filename in LOAD_ORDER}
    loaded["POD_TEMPLATE"] = {**default_templates(), **loaded["POD_TEMPLATE"]}
    loaded["RESOURCE_VALIDATION"] = {**default_validations(), **loaded["RESOURCE_VALIDATION"]}
    # `make dev` passes the address of kubesim serving one simulated cluster per backend (under /clusters/<name>);
    # DEMO_CLUSTER_URL points every backend at one cluster instead (tests that start one EmulatorServer).
    clusters_url, cluster_url = os.environ.get("DEMO_CLUSTERS_URL"), os.environ.get("DEMO_CLUSTER_URL")
    for name, body in loaded["BACKEND"].items():
        url = f"{clusters_url.rstrip('/')}/clusters/{name}" if clusters_url else cluster_url
        if url:
            body["api_url"] = url
            if body.get("machine_provider") == "rosa":  # the simulated cluster serves OCM's API too
                body["ocm_url"] = url
    return [(config_type, loaded[config_type]) for config_type, _ in LOAD_ORDER]


class Command(PortalCommand):
    help = (
        "Load demo pools, templates, validations, backends, two accounts, their roles and the researcher's "
        "project (idempotent)."
    )

    def handle(self, *args, **options):
        # The simulated cluster (and its OCM API) is not running yet during `make dev`'s seed: the machine pools
        # are put in step by the devserver's periodic reconcile, which runs once as soon as the cluster answers.
        with reconcile.passes_deferred():
            self._load()
        self.stdout.write("machine pools: put in step with the provider by the first periodic reconcile")
        # `manage.py devserver` prints where to sign in, once the web server answers
        self.stdout.write(self.style.SUCCESS("demo data loaded; accounts: admin (platform admin), researcher"))

    def _load(self) -> None:
        actor = Actor(name="seed_demo", source="system")
        with transaction.atomic():
            for config_type, documents in demo_documents():
                results = store.apply_many(config_type, documents, actor, description="demo data")
                changed = sum(result.changed for result in results)
                self.stdout.write(f"{config_type}: {len(results)} objects, {changed} changed")
            self._accounts()
            self._teams(actor)
            # node pools name the teams in their quotas, so they come after them
            results = store.apply_many(
                "NODE_POOL", load_document(DEMO_DIR / "node_pools.yaml"), actor, description="demo data"
            )
            self.stdout.write(f"NODE_POOL: {len(results)} objects, {sum(r.changed for r in results)} changed")
            self._spot_pool(actor)

    def _spot_pool(self, actor) -> None:
        """The ROSA cluster's pool, its platforms made from the machine pools by the same service as the admin
        action and `machinepool platform`; a second run changes nothing."""
        if not Pool.objects.filter(name=SPOT_POOL).exists():
            store.apply("POOL", SPOT_POOL, SPOT_POOL_BODY, actor, description="demo data")
        for machine_pool, platform, _ in SPOT_PLATFORMS:
            make_platform(machine_pool, actor, pool=SPOT_POOL, platform=platform)
        body = {**store.show("POOL", SPOT_POOL), **SPOT_POOL_BODY}  # as the other demo pools: the file's word wins
        body["default_platform"] = SPOT_PLATFORMS[0][1]
        for _, platform, variables in SPOT_PLATFORMS:
            body["platforms"][platform]["default_variables"] = variables
        store.apply("POOL", SPOT_POOL, body, actor, description="demo data")
        self.stdout.write(
            f"POOL {SPOT_POOL}: platforms made from machine pools {', '.join(m for m, *_ in SPOT_PLATFORMS)}"
        )

    def _accounts(self) -> tuple[str, str]:
        admin_password = os.environ.get("DEMO_ADMIN_PASSWORD", "admin")
        researcher_password = os.environ.get("DEMO_RESEARCHER_PASSWORD", "researcher")
        users = get_user_model()
        if not users.objects.filter(username="admin").exists():
            users.objects.create_superuser("admin", "admin@example.com", admin_password)
        if not users.objects.filter(username="researcher").exists():
            users.objects.create_user("researcher", "researcher@example.com", researcher_password)
        self._roles(users)
        return admin_password, researcher_password

    def _roles(self, users) -> None:
        """admin holds osmo-admin; researcher holds osmo-user and the robotics team role (robotics-* pools)."""
        actor = Actor(name="seed_demo", source="system")
        roles.ensure_builtin_roles()
        roles.set_pool_role("osmo-robotics", actor, description="demo data")
        roles.update_user_roles(users.objects.get(username="admin"), add=["osmo-admin"], actor=actor)
        roles.update_user_roles(
            users.objects.get(username="researcher"), add=["osmo-user", "osmo-robotics"], actor=actor
        )

    def _teams(self, actor) -> None:
        """The researcher's team as a project (docs/teams.md): department research, project robotics, whose
        role osmo-robotics the researcher holds, so their workflows are charged to it. Two more projects (vision
        beside it, inference in department ml-ops) share the demo node pools' quotas (node_pools.yaml)."""
        for department in ("research", "ml-ops"):
            if not Department.objects.filter(name=department).exists():
                teams.create_department(department, actor, description="demo data")
        for project, department, description in DEMO_PROJECTS:
            if not Project.objects.filter(name=project).exists():
                teams.create_project(project, department, actor, description=description)
