"""Deleting something that workflow history or other config refers to is a clear refusal at every door:
the CLI (one line, exit 1), the REST API (409 `in_use`), the admin (a message), never a ProtectedError."""

from __future__ import annotations

import re

import pytest
from django.core.management import base
from django.urls import reverse

from clusters.models import Backend
from configs import store
from configs.errors import ConfigInUse
from pools.models import Pool
from tests.clirun import run_as_cli
from tests.factories import UserFactory, WorkflowFactory
from tests.integration.conftest import CLI
from workflows.models import Workflow

POOL = {
    "backend": "default",
    "common_pod_template": ["default_user"],
    "platforms": {"cpu": {}},
    "common_default_variables": {"USER_CPU": 1, "USER_GPU": 0, "USER_MEMORY": "1Gi", "USER_STORAGE": "1Gi"},
}


def _text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


@pytest.fixture
def used_pool(reference_config):
    store.apply("POOL", "busy", POOL, CLI)
    pool = Pool.objects.get(name="busy")
    for _ in range(4):
        WorkflowFactory(pool=pool)
    return pool


@pytest.fixture
def cli(capsys, monkeypatch):
    """`python manage.py config ...` as a shell runs it: errors become one stderr line and exit code 1."""
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction

    return lambda *args: run_as_cli(capsys, "pools", "config", *args)


def test_the_service_names_the_workflows_that_keep_a_pool(used_pool):
    with pytest.raises(ConfigInUse) as caught:
        store.delete("POOL", "busy", CLI)
    assert caught.value.code == "in_use" and caught.value.status == 409
    assert caught.value.reason.startswith("is still referenced by 4 workflows (hello-")
    assert ", …)" in caught.value.reason  # three named, the rest counted
    assert Pool.objects.filter(name="busy").exists() and Workflow.objects.count() == 4


def test_a_pool_without_history_is_deleted(used_pool):
    store.apply("POOL", "idle", POOL, CLI)
    store.delete("POOL", "idle", CLI)
    assert not Pool.objects.filter(name="idle").exists()


def test_cli_refusal_is_one_line_and_exit_code_one(used_pool, cli):
    code, out, err = cli("delete", "POOL", "busy")
    assert (code, out) == (1, "")
    assert err.count("\n") == 1 and "Traceback" not in err and "ProtectedError" not in err
    assert err.startswith("error: name: is still referenced by 4 workflows (")
    assert "(value: 'busy')" in err


def test_cli_refuses_a_backend_referenced_by_a_pool(used_pool, cli):
    code, _, err = cli("delete", "BACKEND", "default")
    assert code == 1 and err.count("\n") == 1 and "pool busy" in err
    assert Backend.objects.filter(name="default").exists()


def test_api_delete_answers_409_in_use_in_the_error_shape(used_pool, admin_api):
    response = admin_api.delete("/api/configs/pool/busy")
    assert response.status_code == 409
    body = response.json()
    assert set(body) == {"code", "field", "value", "reason", "error_code", "message"}
    assert (body["code"], body["field"], body["value"]) == ("in_use", "name", "busy")
    assert "4 workflows" in body["reason"]


def test_api_rollback_to_a_deleted_revision_is_refused_the_same_way(used_pool, admin_api):
    store.apply("POOL", "gone", POOL, CLI)
    store.delete("POOL", "gone", CLI)
    store.apply("POOL", "gone", POOL, CLI)  # revision 3
    WorkflowFactory(pool=Pool.objects.get(name="gone"))
    response = admin_api.post(
        "/api/configs/history/rollback", {"config_type": "POOL", "name": "gone", "revision": 2}, format="json"
    )
    assert response.status_code == 409 and response.json()["code"] == "in_use"
    assert "1 workflow (" in response.json()["reason"]


@pytest.mark.parametrize("config_type", ["pod_template", "resource_validation", "backend"])
def test_api_refuses_every_referenced_config_type(used_pool, admin_api, config_type):
    name = {"pod_template": "default_user", "resource_validation": "default_cpu", "backend": "default"}[config_type]
    if config_type == "resource_validation":
        store.apply("POOL", "checked", {**POOL, "common_resource_validations": [name]}, CLI)
    response = admin_api.delete(f"/api/configs/{config_type}/{name}")
    assert response.status_code == 409, response.json()
    assert response.json()["code"] == "in_use" and "pool " in response.json()["reason"]


def test_admin_delete_page_shows_a_message(used_pool, admin_client):
    url = reverse("admin:pools_pool_delete", args=[used_pool.pk])
    page = admin_client.get(url, follow=True)
    assert page.status_code == 200
    assert "cannot be deleted: still referenced by 4 workflows" in page.content.decode()
    posted = admin_client.post(url, {"post": "yes"}, follow=True)
    assert posted.status_code == 200 and "4 workflows" in posted.content.decode()
    assert Pool.objects.filter(name="busy").exists()


def test_admin_bulk_delete_lists_the_protected_workflows(used_pool, admin_client):
    response = admin_client.post(
        reverse("admin:pools_pool_changelist"),
        {"action": "delete_selected", "_selected_action": [used_pool.pk], "post": "yes"},
    )
    assert response.status_code == 200
    text = _text(response)
    assert "would require deleting the following protected related objects" in text and "Workflow: hello-" in text
    assert Pool.objects.filter(name="busy").exists()


def test_admin_refuses_deleting_a_user_with_workflows(used_pool, admin_client):
    submitter = UserFactory(username="submitter")
    WorkflowFactory(pool=used_pool, submitted_by=submitter, workflow_id="theirs-1")
    page = admin_client.post(reverse("admin:auth_user_delete", args=[submitter.pk]), {"post": "yes"})
    assert page.status_code == 200
    text = _text(page)
    assert "would require deleting the following protected related objects" in text and "theirs-1" in text
    assert submitter.__class__.objects.filter(username="submitter").exists()
