"""The data migration that charges existing workflows to their submitter's project (workflows 0005), run on
a database migrated to just before it (MigrationExecutor, migrate_from → migrate_to)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

MIGRATE_FROM = [("workflows", "0004_workflow_project"), ("teams", "0001_initial")]
MIGRATE_TO = [("workflows", "0005_charge_workflows_to_projects")]


def migrate(targets):
    """Migrate the apps of `targets` to them (every other app stays at its latest migration); the apps
    registry of that state."""
    executor = MigrationExecutor(connection)
    named = {app for app, _ in targets}
    state = [node for node in executor.loader.graph.leaf_nodes() if node[0] not in named] + list(targets)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(state).apps


@pytest.fixture
def before(transactional_db):
    apps = migrate(MIGRATE_FROM)
    yield apps
    call_command("migrate", verbosity=0)  # the rest of the suite expects the latest schema


def test_workflows_are_charged_to_the_submitters_only_project(before):
    apps = before
    user_model, group = apps.get_model("auth", "User"), apps.get_model("auth", "Group")
    role, department = apps.get_model("access", "Role"), apps.get_model("teams", "Department")
    project, workflow = apps.get_model("teams", "Project"), apps.get_model("workflows", "Workflow")
    backend = apps.get_model("clusters", "Backend").objects.create(name="old-cluster")
    pool = apps.get_model("pools", "Pool").objects.create(name="old-pool", backend=backend)
    research = department.objects.create(name="research")
    projects = {}
    for name in ("vision", "speech"):
        role_group = group.objects.create(name=f"osmo-{name}")
        team_role = role.objects.create(name=f"osmo-{name}", group=role_group)
        projects[name] = project.objects.create(name=name, department=research, role=team_role)
    plain = group.objects.create(name="osmo-other")
    role.objects.create(name="osmo-other", group=plain)
    one = user_model.objects.create(username="one")  # vision only (and a role of no project)
    one.groups.add(projects["vision"].role.group_id, plain)
    both = user_model.objects.create(username="both")  # ambiguous: stays uncharged
    both.groups.add(projects["vision"].role.group_id, projects["speech"].role.group_id)
    none = user_model.objects.create(username="none")
    workflow.objects.create(workflow_id="kept-1", name="kept", pool=pool, submitted_by=one, project=projects["speech"])
    for user in (one, both, none):
        for number in (1, 2):
            workflow.objects.create(
                workflow_id=f"{user.username}-{number}", name=user.username, pool=pool, submitted_by=user
            )

    after = migrate(MIGRATE_TO)

    charged = dict(after.get_model("workflows", "Workflow").objects.values_list("workflow_id", "project__name"))
    assert charged == {
        "one-1": "vision",
        "one-2": "vision",
        "both-1": None,
        "both-2": None,
        "none-1": None,
        "none-2": None,
        "kept-1": "speech",
    }
