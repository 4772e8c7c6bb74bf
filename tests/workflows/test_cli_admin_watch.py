"""The `workflow` and `watch_workflows` commands, the read-only admin, and the watcher's relist on 410."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command

from portal.errors import DomainError
from tests.polling import drain_until
from tests.workflows.conftest import NAMESPACE, spec
from workflows.lifecycle.create import instance
from workflows.models import Task, TaskEvent, Workflow

ROOT = Path(__file__).resolve().parents[2]


def run(*args) -> str:
    out = StringIO()
    call_command("workflow", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def spec_file(tmp_path):
    path = tmp_path / "hello.yaml"
    path.write_text(yaml.safe_dump(spec("hello", tasks=2)))
    return path


def test_cli_submit_list_show_events_cancel(pool, alice, spec_file, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        out = run("submit", str(spec_file), "--pool", "batch", "--user", "alice", "--priority", "low")
    assert out.splitlines()[0] == "workflow hello-1 submitted to pool batch: PENDING"
    assert "- task t1 on platform cpu: pod hello-1-t1" in out
    assert Workflow.objects.get(workflow_id="hello-1").priority == "LOW"
    listing = run("list", "--user", "alice")
    assert listing.splitlines()[0].split() == ["WORKFLOW", "POOL", "USER", "STATUS", "TASKS", "SUBMITTED"]
    assert listing.splitlines()[1].split()[:5] == ["hello-1", "batch", "alice", "PENDING", "2"]
    as_json = json.loads(run("list", "--status", "PENDING", "--format", "json"))
    assert [w["workflow_id"] for w in as_json["workflows"]] == ["hello-1"]
    shown = run("show", "hello-1")
    assert "status: PENDING" in shown and "hello-1-t0" in shown
    assert json.loads(run("show", "hello-1", "--format", "json"))["tasks"][1]["name"] == "t1"
    assert "SUBMITTED" in run("events", "hello-1")
    with django_capture_on_commit_callbacks(execute=False):
        assert run("cancel", "hello-1", "--message", "test").startswith("workflow hello-1: CANCELLED")
    assert TaskEvent.objects.filter(kind="CANCELLED").first().message == "cancelled by the command line: test"
    with pytest.raises(DomainError) as caught:
        run("cancel", "hello-1")
    assert caught.value.code == "workflow_finished"


def test_cli_dry_run_prints_the_pods(pool, alice, spec_file):
    out = run("submit", str(spec_file), "--pool", "batch", "--user", "alice", "--dry-run")
    assert out.startswith(f"{spec_file}: valid for pool batch (DRY_RUN; nothing stored)")
    assert "hive.openshift.io/machine-pool: cpu" in out
    data = json.loads(
        run("submit", str(spec_file), "--pool", "batch", "--user", "alice", "--dry-run", "--format", "json")
    )
    assert data["status"] == "DRY_RUN" and data["tasks"][0]["pod"]["kind"] == "Pod"
    assert not Workflow.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["submit", "missing.yaml", "--pool", "batch", "--user", "alice"], "missing.yaml: file not found"),
        (["submit", "{spec}", "--pool", "nope", "--user", "alice"], "pool: no pool named 'nope' (value: 'nope')"),
        (["submit", "{spec}", "--pool", "batch", "--user", "bob"], "bob may not submit workflows to pool batch"),
        (["submit", "{spec}", "--pool", "batch"], "--user: name the submitter with --user (or set PORTAL_CLI_USER)"),
        (["show", "nope-1"], "workflow_id: no workflow 'nope-1' (value: 'nope-1')"),
    ],
)
def test_cli_errors_are_one_line(pool, alice, bob, spec_file, args, message):
    args = [str(spec_file) if a == "{spec}" else a for a in args]
    with pytest.raises(DomainError) as caught:
        run(*args)
    assert message in str(caught.value)


def test_cli_exit_code_and_stderr_outside_call_command(tmp_path):
    """The real command line: one `error:` line and exit status 1 (no database needed to get there)."""
    result = subprocess.run(
        [sys.executable, "manage.py", "workflow", "submit", str(tmp_path / "none.yaml"), "--pool", "x", "--user", "u"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"},
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1].startswith("error: ")


# ------------------------------------------------------------------------------------------ admin


def test_admin_lists_and_shows_workflows_read_only(
    pool, alice, admin_user, admin_client, django_capture_on_commit_callbacks
):
    from django.contrib.auth.models import Group

    from workflows.services import SubmitRequest, submit

    admin_user.groups.add(Group.objects.get(name="osmo-admin"))  # the console asks access.policy, not is_staff
    with django_capture_on_commit_callbacks(execute=False):
        workflow_id = submit(SubmitRequest(pool="batch", spec=spec("shown"), who=alice)).workflow_id
    listing = admin_client.get("/admin/workflows/workflow/?status__exact=PENDING")
    assert listing.status_code == 200 and workflow_id in listing.content.decode()
    workflow = Workflow.objects.get(workflow_id=workflow_id)
    page = admin_client.get(f"/admin/workflows/workflow/{workflow.pk}/change/")
    text = page.content.decode()
    assert page.status_code == 200 and "submitted by alice" in text
    logs = admin_client.get(f"/admin/workflows/workflow/{workflow.pk}/logs/")
    assert logs.status_code == 200 and "shown-1-t0" in logs.content.decode()  # the pod's name, on the logs page
    assert 'name="_save"' not in text  # read-only: nothing to save
    assert admin_client.get("/admin/workflows/workflow/add/").status_code == 403
    assert admin_client.post(f"/admin/workflows/workflow/{workflow.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Workflow.objects.filter(pk=workflow.pk).exists()


# ------------------------------------------------------------------------------------------ watcher


def test_watcher_lists_again_after_410_and_catches_up(transactional_db, watcher, kube_server, pool, alice):
    from workflows.services import SubmitRequest, submit

    drain_until(watcher, lambda: watcher.backends[0].lists >= 1)
    workflow = Workflow.objects.get(
        workflow_id=submit(SubmitRequest(pool="batch", spec=spec("watched", platform="forever"), who=alice)).workflow_id
    )  # eager: pod created now
    drain_until(watcher, lambda: Workflow.objects.get(pk=workflow.pk).status == "RUNNING")
    kube_server.emulator.compact()
    kube_server.emulator.expire_watches("pods")  # 410: the watcher must list again
    task = workflow.tasks.get()
    kube_server.emulator.patch("pods", task.pod_name, {"metadata": {"annotations": {"x": "y"}}}, NAMESPACE)
    drain_until(watcher, lambda: watcher.backends[0].lists >= 2)
    kube_server.emulator.delete("pods", task.pod_name, NAMESPACE)
    drain_until(watcher, lambda: Task.objects.get(pk=task.pk).status == "FAILED_BACKEND_ERROR")
    assert (
        "was deleted" in Task.objects.get(pk=task.pk).error or "no longer exists" in Task.objects.get(pk=task.pk).error
    )
    assert instance() == "test-portal"


def test_watch_workflows_command_stops_cleanly_without_backends(db):
    out = StringIO()
    call_command("watch_workflows", "no-such-backend", stdout=out)
    assert "no backend with a connection to watch" in out.getvalue()


def test_a_backend_with_unusable_settings_is_reported_and_the_others_are_watched(backend):
    from clusters.models import Backend
    from workflows.watcher import WorkflowWatcher

    Backend.objects.create(name="incluster", connection="in-cluster")
    watcher = WorkflowWatcher(None, watch_seconds=30)
    try:
        lines = watcher.start()
    finally:
        watcher.stop()
    assert lines[0].startswith("not watched: backend incluster: not running inside a cluster")
    assert lines[1].startswith("backend sim: watching pods labelled")
