"""A CLI call imports what it uses, nothing more: no Celery, Redis or Kubernetes client at start-up.

Importing them (and the admin stack, the OIDC client, the schema generator) was most of a CLI call's
start-up (Pool Portal issue #17; timings in bench/bench_cli.py). So were, until issue #35, the services the
apps' ready() wired (config handlers, receivers and hooks, now by dotted path: portal.lazy) and the whole
pure engine with its template sandbox. These tests look at what a real process loaded, not at how long it took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

# What a task, a watcher or a web request needs; never a one-shot command that does not call them.
WORKER_AND_CLUSTER = (
    "celery",
    "kombu",
    "redis",
    "kubernetes",
    "kubernetes_validate",
    "schemathesis",
    "portal.celery",
    "portal.broker",
)
# Loaded on first need by the URLconf (portal.apps.load_admin) or by a sign-in (access.oidc).
WEB_ONLY = (
    "pools.admin",
    "access.admin",
    "workflows.admin",
    "selfservice.admin",
    "unfold.admin",
    "jwt",
    "mozilla_django_oidc",
    "requests",
    "drf_spectacular.openapi",
    "drf_spectacular.views",
)

# What a write, a submission, an admission pass or a cluster call needs: a one-shot read, or a write of a type
# that needs none of them, loads none of it (issue #35).
WRITES_AND_PASSES = (
    "jinja2",  # the template sandbox (pools.engine.sandbox): compiling platforms, resolving pods
    "pools.engine.sandbox",
    "pools.engine.placement",
    "pools.services.compilation",
    "pools.services.membership",
    "pools.services.machine_pool_shapes",
    "pools.services.config_handlers",
    "quotas.config_handlers",
    "quotas.services.gate",
    "quotas.services.admission_passes",
    "quotas.services.delegation",
    "quotas.services.what_if",
    "workflows.lifecycle",
    "workflows.services",
    "clusters.kube.connection",
    "clusters.machinepools.reconcile",
    "urllib3",
    "cryptography",  # secrets at rest: decrypted only when a command reads one
)

# Runs manage.py as a shell does, then writes the names of the loaded modules to the file in argv[1].
PROBE = """
import json, runpy, sys
report, sys.argv = sys.argv[1], ["manage.py", *sys.argv[2:]]
runpy.run_path("manage.py", run_name="__main__")
json.dump(sorted(sys.modules), open(report, "w"))
"""

# Imports every management command of the project, without running it.
IMPORT_COMMANDS = """
import json, os, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
django.setup()
from django.core.management import get_commands, load_command_class
ours = {name: app for name, app in get_commands().items() if not app.startswith("django")}
for name, app in ours.items():
    load_command_class(app, name)
json.dump({"commands": sorted(ours), "modules": sorted(sys.modules)}, open(sys.argv[1], "w"))
"""


def _env() -> dict[str, str]:
    """This test's PostgreSQL database (empty but for what migrations create), for another process."""
    settings_dict = connection.settings_dict
    assert connection.vendor == "postgresql", "another process needs a database server to share this one"
    url = (
        f"postgres://{settings_dict['USER'] or ''}@{settings_dict['HOST'] or '127.0.0.1'}:"
        f"{settings_dict['PORT'] or 5432}/{settings_dict['NAME']}"
    )
    return {**os.environ, "DATABASE_URL": url, "TEST_DATABASE_NAME": "", "DEBUG": "true"}


def _loaded(tmp_path: Path, script: str, *args: str) -> tuple[subprocess.CompletedProcess, object]:
    report = tmp_path / "modules.json"
    process = subprocess.run(
        [sys.executable, "-c", script, str(report), *args],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert process.returncode == 0, process.stderr
    return process, json.loads(report.read_text())


def _among(modules: list[str], packages: tuple[str, ...]) -> list[str]:
    return [name for name in modules if name in packages or name.startswith(tuple(f"{p}." for p in packages))]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("command", "printed"),
    [
        (("pool", "list"), "NAME "),
        (("resource", "list"), "TOTAL ("),
    ],
)
def test_a_listing_call_loads_no_worker_cluster_or_web_modules(tmp_path, command, printed):
    process, modules = _loaded(tmp_path, PROBE, *command)
    assert printed in process.stdout  # it ran for real, on the database
    assert _among(modules, WORKER_AND_CLUSTER) == []
    assert _among(modules, WEB_ONLY) == []


@pytest.mark.django_db(transaction=True)  # the rows are committed: the command runs in another process
def test_quota_show_and_token_create_load_no_engine_sandbox_admission_or_cluster_client(tmp_path):
    """The bench's two daily commands (docs/performance.md, `cli`): a read and a write that need none of it."""
    from quotas.services.node_pools import default_node_pool
    from tests.factories import BackendFactory, UserFactory

    node_pool = default_node_pool(BackendFactory(name="startup")).name
    UserFactory(username="startup-user")
    shown, show_loaded = _loaded(tmp_path, PROBE, "quota", "show", node_pool)
    created, create_loaded = _loaded(tmp_path, PROBE, "token", "create", "startup-user", "first", "--expires", "1d")
    assert f"node pool {node_pool} " in shown.stdout  # each ran for real, on the database
    assert "first" in created.stdout + created.stderr
    for modules in (show_loaded, create_loaded):
        assert _among(modules, WRITES_AND_PASSES) == []
        assert _among(modules, WORKER_AND_CLUSTER) == []
        assert _among(modules, WEB_ONLY) == []


@pytest.mark.django_db
def test_importing_every_management_command_loads_no_celery_redis_or_kubernetes_client(tmp_path):
    _, loaded = _loaded(tmp_path, IMPORT_COMMANDS)
    assert {"pool", "config", "workflow", "backend", "watch_cluster", "devserver"} <= set(loaded["commands"])
    assert _among(loaded["modules"], WORKER_AND_CLUSTER) == []


# The task modules bind their tasks to the portal's Celery app themselves (`portal` does not import it).
TASK_APPS = """
import json, os, sys
import django
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
django.setup()
from workflows import tasks as workflow_tasks
apps = [workflow_tasks.create_pods.app]  # before clusters.tasks is imported: it imports portal.celery too
from clusters import tasks as inventory_tasks
apps.append(inventory_tasks.sync_backend.app)
json.dump([[app.main, app.conf.task_always_eager] for app in apps], open(sys.argv[1], "w"))
"""


@pytest.mark.django_db
def test_the_admin_is_loaded_by_the_urlconf_on_the_policy_site(client):
    from django.contrib import admin

    from access.admin.site import PolicyAdminSite

    assert client.get("/admin/login/").status_code == 200
    assert isinstance(admin.site, PolicyAdminSite)
    assert {"pools.pool", "access.role", "workflows.workflow", "selfservice.poolrequest"} <= {
        f"{model._meta.app_label}.{model._meta.model_name}" for model in admin.site._registry
    }


@pytest.mark.django_db
def test_tasks_enqueue_through_the_portal_celery_app_in_a_process_that_never_imported_it(tmp_path):
    _, apps = _loaded(tmp_path, TASK_APPS)
    assert apps == [["portal", True], ["portal", True]]  # the portal's settings: no broker, run in-process
