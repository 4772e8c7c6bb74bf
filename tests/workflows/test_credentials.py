"""A task's `credentials:` and a workflow's registry credentials (workflows.credentials, docs/credentials.md):
refused at submission on every door when missing, turned into Secrets the pods reference, written before the
pods in the simulated cluster and deleted when the workflow ends."""

from __future__ import annotations

import base64
from io import StringIO

import pytest
import yaml
from django.core.management import call_command

from access.models import Credential
from access.services import credentials
from portal.errors import PortalError
from tests.workflows.conftest import NAMESPACE, api, settle_until, spec
from workflows.lifecycle.create import create_pods
from workflows.models import TaskStatus, Workflow

SUBMIT = "/api/pool/batch/workflow"


@pytest.fixture
def creds(alice):
    credentials.set_credential(alice, "omni", {"generic_credential": {"credential": {"user": "ada", "pass": "pw-1"}}})
    credentials.set_credential(alice, "ngc", {"registry_credential": {"registry": "nvcr.io", "auth": "nv"}})
    return alice


def document(name: str, task_credentials: dict | None, image: str = "busybox:1.36") -> dict:
    doc = spec(name)
    doc["workflow"]["tasks"][0]["image"] = image
    if task_credentials is not None:
        doc["workflow"]["tasks"][0]["credentials"] = task_credentials
    return doc


@pytest.mark.parametrize(
    ("task_credentials", "field", "value", "reason"),
    [
        ({"nothere": "/creds"}, "tasks[0].credentials.nothere", "nothere", "no credential nothere"),
        ({"omni": {"PASS": "password"}}, "tasks[0].credentials.omni.PASS", "password", "has no key password"),
        ({"ngc": "/docker"}, "tasks[0].credentials.ngc", "ngc", "is a REGISTRY credential"),
        ({"omni": "relative/dir"}, "tasks[0].credentials.omni", "relative/dir", "absolute"),
        ({"omni": "/osmo/x"}, "tasks[0].credentials.omni", "/osmo/x", "under /osmo"),
        ({"omni": {"1BAD": "pass"}}, 'tasks[0].credentials.omni["1BAD"]', "1BAD", "variable name"),
        ({"omni": {"X": "a/b"}}, "tasks[0].credentials.omni.X", "a/b", "names a key"),
        ({"omni": 3}, "tasks[0].credentials.omni", 3, "mount path"),
        ({"bad name": "/x"}, 'tasks[0].credentials["bad name"]', "bad name", "credential name"),
    ],
)
def test_the_rest_door_refuses_with_field_value_and_why(pool, creds, task_credentials, field, value, reason):
    answer = api(creds).post(SUBMIT, document("refused", task_credentials), format="json")
    assert answer.status_code == 400, answer.json()
    body = answer.json()
    assert (body["field"], body["value"]) == (field, value) and reason in body["reason"], body
    assert not Workflow.objects.exists()


def test_the_cli_door_refuses_a_missing_credential(pool, creds, tmp_path):
    path = tmp_path / "wf.yaml"
    path.write_text(yaml.safe_dump(document("cli", {"nothere": {"X": "k"}})))
    with pytest.raises(PortalError) as refused:  # the command prints it on one line and exits 1
        call_command("workflow", "submit", str(path), "--pool", "batch", "--user", "alice", stdout=StringIO())
    assert refused.value.field == "tasks[0].credentials.nothere" and "no credential nothere" in str(refused.value)
    assert not Workflow.objects.exists()


def test_pods_reference_the_secrets_which_hold_the_values(pool, creds, kube_server, backend, run_on_commit, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    doc = document("uses", {"omni": "/etc/omni"}, "nvcr.io/acme-research/x:1")
    answer = api(creds).post(SUBMIT, doc, format="json")
    assert answer.status_code == 200, answer.json()
    workflow = Workflow.objects.get()
    assert [s["name"] for s in workflow.credential_secrets] == ["uses-1-registry", "uses-1-credentials"]
    pod = workflow.tasks.get().pod
    assert pod["spec"]["imagePullSecrets"] == [{"name": "uses-1-registry"}]
    volume = next(v for v in pod["spec"]["volumes"] if v["name"] == "credential-omni")
    assert volume["secret"] == {
        "secretName": "uses-1-credentials",
        "items": [{"key": "omni.pass", "path": "pass"}, {"key": "omni.user", "path": "user"}],
    }
    mount = next(m for m in pod["spec"]["containers"][0]["volumeMounts"] if m["name"] == "credential-omni")
    assert mount == {"name": "credential-omni", "mountPath": "/etc/omni", "readOnly": True}
    assert "pw-1" not in str(workflow.spec) + str(pod)  # values never in the database's workflow rows

    run_on_commit(create_pods, workflow.pk)
    opaque = kube_server.emulator.get("secrets", "uses-1-credentials", NAMESPACE)
    assert opaque["type"] == "Opaque" and base64.b64decode(opaque["data"]["omni.pass"]).decode() == "pw-1"
    assert opaque["metadata"]["labels"]["pool-portal/instance"] == "test-portal"
    settle_until(backend, workflow, {"COMPLETED"}, run_on_commit)
    names = [s["metadata"]["name"] for s in kube_server.emulator.list("secrets", NAMESPACE)]
    assert "uses-1-credentials" not in names and "uses-1-registry" not in names


def test_a_credential_deleted_before_the_pods_fails_the_task_with_why(pool, creds, kube_server, backend, run_on_commit):
    api(creds).post(SUBMIT, document("gone", {"omni": {"OMNI_USER": "user"}}), format="json")
    workflow = Workflow.objects.get()
    Credential.objects.filter(name="omni").delete()
    result = run_on_commit(create_pods, workflow.pk)
    assert result.failed == 1
    task = workflow.tasks.get()
    assert task.status == TaskStatus.FAILED_BACKEND_ERROR and "omni was deleted" in task.error
    assert not kube_server.emulator.list("pods", NAMESPACE)


def test_a_workflow_without_credentials_has_no_secret_and_no_pull_secret(pool, creds):
    api(creds).post(SUBMIT, document("plain", None), format="json")
    workflow = Workflow.objects.get()
    assert workflow.credential_secrets == [] and "imagePullSecrets" not in workflow.tasks.get().pod["spec"]


def test_a_dry_run_shows_what_the_credentials_add_and_where_it_comes_from(pool, creds):
    doc = document("preview", {"omni": {"OMNI_USER": "user"}})
    doc["workflow"]["tasks"][0]["image"] = "nvcr.io/acme-research/x:1"
    answer = api(creds).post(SUBMIT + "?dry_run=true", doc, format="json")
    assert answer.status_code == 200, answer.json()
    task = answer.json()["tasks"][0]
    assert task["pod"]["spec"]["imagePullSecrets"] == [{"name": "preview-dry-run-registry"}]
    added = {path for path, origin in task["provenance"].items() if "your credentials" in origin["source"]}
    assert "spec.imagePullSecrets[0].name" in added
    assert any(path.endswith("valueFrom.secretKeyRef.key") for path in added)
    assert not Workflow.objects.exists()


def test_a_retry_pod_carries_the_same_credentials(pool, creds):
    from workflows.services import resolve_retry

    api(creds).post(SUBMIT, document("again", {"omni": "/etc/omni"}, "nvcr.io/acme-research/x:1"), format="json")
    workflow = Workflow.objects.get()
    task = workflow.tasks.get()
    retry = resolve_retry(workflow, task, 1)
    assert retry["spec"]["imagePullSecrets"] == task.pod["spec"]["imagePullSecrets"] == [{"name": "again-1-registry"}]
    assert [v for v in retry["spec"]["volumes"] if v["name"] == "credential-omni"] == [
        v for v in task.pod["spec"]["volumes"] if v["name"] == "credential-omni"
    ]
