"""`osmo credential set|list|delete` played against gunicorn as OSMO's client 6.4 sends them (NVIDIA/OSMO
src/cli/credential.py; the transport is tests/osmo_cli/client.py), and a private image (`nvcr.io`, which the
simulated kubelet pulls only with a pull secret) run through a REGISTRY credential."""

from __future__ import annotations

import base64
import json

import pytest
import yaml

from access.models import Credential
from tests.osmo_cli.client import OsmoClient, OsmoUserError
from tests.osmo_cli.test_workflow import _reconciled, osmo_submit
from tests.polling import wait_until
from tests.workflows.conftest import NAMESPACE, backend, batch_role, kube_server, pool, spec  # noqa: F401
from workflows.models import Workflow


@pytest.fixture
def cli(pool, batch_role, osmo_user, osmo_login) -> OsmoClient:  # noqa: F811 - the imported fixtures
    ada = osmo_user("osmo-user", username="ada")
    ada.groups.add(batch_role.group)
    return osmo_login(ada)


def osmo_set(cli: OsmoClient, name: str, cred_type: str, payload: dict):
    """credential.py _run_set_command: key=value pairs; GENERIC wrapped in {'credential': …}; the body is
    {<type lower>_credential: payload}, POSTed to api/credentials/{name}."""
    if cred_type == "GENERIC":
        payload = {"credential": payload}
    return cli.request("POST", f"api/credentials/{name}", payload={cred_type.lower() + "_credential": payload})


def osmo_list(cli: OsmoClient) -> list[list[str]]:
    """credential.py _run_list_command: the table's columns cred_name, cred_type, profile, local."""
    result = cli.request("GET", "api/credentials")
    return [[c.get(col, "-") for col in ("cred_name", "cred_type", "profile")] for c in result["credentials"]]


def test_set_list_delete(cli):
    assert osmo_set(cli, "ngc", "REGISTRY", {"registry": "nvcr.io", "username": "$oauthtoken", "auth": "nv-1"}) is None
    osmo_set(cli, "omni", "GENERIC", {"omni_user": "ada", "omni_pass": "s3cret-pass"})
    listed = cli.request("GET", "api/credentials")["credentials"]
    assert osmo_list(cli) == [["ngc", "REGISTRY", "nvcr.io"], ["omni", "GENERIC", None]]
    assert listed[1]["keys"] == ["omni_pass", "omni_user"]
    assert "s3cret-pass" not in json.dumps(listed) and "nv-1" not in json.dumps(listed)  # never shown back

    # credential.py _run_delete_command: result['credentials'][0]['cred_type']
    deleted = cli.request("DELETE", "api/credentials/omni")
    assert deleted["credentials"][0]["cred_type"] == "GENERIC"
    assert osmo_list(cli) == [["ngc", "REGISTRY", "nvcr.io"]]
    with pytest.raises(OsmoUserError) as missing:
        cli.request("DELETE", "api/credentials/omni")
    assert missing.value.status_code == 404 and "omni" in missing.value.message


def test_a_bad_payload_is_refused_with_the_field(cli):
    with pytest.raises(OsmoUserError) as extra:
        osmo_set(cli, "ngc", "REGISTRY", {"auth": "x", "password": "y"})
    assert extra.value.status_code == 400 and extra.value.payload["field"] == "registry_credential.password"
    assert not Credential.objects.exists()


def _private(name: str, credentials: dict | None = None) -> str:
    document = spec(name)
    task = document["workflow"]["tasks"][0]
    task["image"] = "nvcr.io/acme-research/trainer:1.0"
    if credentials:
        task["credentials"] = credentials
    return yaml.safe_dump(document)


def test_a_private_image_runs_with_the_pull_secret_which_goes_with_the_workflow(cli, backend, kube_server):  # noqa: F811
    osmo_set(cli, "ngc", "REGISTRY", {"registry": "nvcr.io", "username": "$oauthtoken", "auth": "nv-key"})
    osmo_set(cli, "omni", "GENERIC", {"omni_user": "ada", "omni_pass": "s3cret-pass"})
    name = osmo_submit(cli, _private("private", {"omni": {"OMNI_PASS": "omni_pass"}}))["name"]
    wait_until(lambda: Workflow.objects.get(workflow_id=name).status != "PENDING", timeout=20)

    pod = kube_server.emulator.get("pods", f"{name}-t0", namespace=NAMESPACE)
    assert pod["spec"]["imagePullSecrets"] == [{"name": f"{name}-registry"}]
    env = {e["name"]: e.get("valueFrom") for e in pod["spec"]["containers"][0]["env"]}
    assert env["OMNI_PASS"] == {"secretKeyRef": {"name": f"{name}-credentials", "key": "omni.omni_pass"}}
    pull = kube_server.emulator.get("secrets", f"{name}-registry", namespace=NAMESPACE)
    config = json.loads(base64.b64decode(pull["data"][".dockerconfigjson"]))
    assert base64.b64decode(config["auths"]["nvcr.io"]["auth"]).decode() == "$oauthtoken:nv-key"

    wait_until(lambda: _reconciled(backend, name) == "COMPLETED", timeout=30, interval=0.2)
    wait_until(lambda: not _secrets(kube_server, name), timeout=20, interval=0.2)  # removed with the workflow


def test_a_private_image_without_a_credential_does_not_pull(cli, backend, kube_server):  # noqa: F811
    name = osmo_submit(cli, _private("nopull"))["name"]
    wait_until(lambda: Workflow.objects.get(workflow_id=name).status != "PENDING", timeout=20)

    def waiting() -> str:
        pod = kube_server.emulator.get("pods", f"{name}-t0", namespace=NAMESPACE)
        statuses = (pod.get("status") or {}).get("containerStatuses") or [{}]
        return ((statuses[0].get("state") or {}).get("waiting") or {}).get("reason", "")

    wait_until(lambda: waiting() in ("ErrImagePull", "ImagePullBackOff"), timeout=20, interval=0.1)
    assert "imagePullSecrets" not in kube_server.emulator.get("pods", f"{name}-t0", namespace=NAMESPACE)["spec"]


def test_a_missing_credential_is_refused_at_submission(cli):
    with pytest.raises(OsmoUserError) as refused:
        osmo_submit(cli, _private("missing", {"nothere": "/creds"}))
    assert refused.value.status_code == 400
    assert refused.value.payload["field"] == "tasks[0].credentials.nothere"
    assert refused.value.payload["value"] == "nothere" and "no credential nothere" in refused.value.message
    assert not Workflow.objects.filter(name="missing").exists()


def _secrets(kube_server, name: str) -> list[str]:  # noqa: F811
    return [
        s["metadata"]["name"]
        for s in kube_server.emulator.list("secrets", namespace=NAMESPACE)
        if s["metadata"]["name"].startswith(name + "-")
    ]
