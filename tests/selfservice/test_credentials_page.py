"""The profile page's credentials (selfservice.credential_views): the list (names, types, keys, never a value),
the add form (refusals name the field, nothing written), delete; and the submit page refusing a spec that names
a credential the user does not have (every door refuses it: docs/credentials.md)."""

from __future__ import annotations

import pytest

from access.models import AuditEvent, Credential
from access.services import credentials
from tests.selfservice.conftest import TRAINING, person
from tests.selfservice.test_pages import HX, SPEC, text

pytestmark = pytest.mark.django_db


@pytest.fixture
def ana(demo_world):
    return person("ana", "osmo-user")


def test_the_page_lists_adds_and_deletes_without_ever_showing_a_value(client, ana):
    client.force_login(ana)
    page = client.get("/profile/")
    assert page.status_code == 200 and 'id="credential-none"' in page.content.decode()
    saved = client.post(
        "/profile/credentials/",
        {"name": "wandb", "cred_type": "GENERIC", "payload": "api_key=s3cret-value\nentity=vision\n"},
        follow=True,
    )
    html = saved.content.decode()
    assert "Credential wandb saved." in html and "s3cret-value" not in html
    assert 'id="credential-wandb"' in html and "api_key, entity" in html
    client.post(
        "/profile/credentials/", {"name": "ngc", "cred_type": "REGISTRY", "payload": "registry=nvcr.io\nauth=k"}
    )
    assert "nvcr.io" in text(client.get("/profile/"))
    assert AuditEvent.objects.filter(action="credential.set", source="page").count() == 2

    deleted = client.post("/profile/credentials/wandb/delete/", follow=True)
    assert "Credential wandb deleted." in deleted.content.decode()
    assert list(Credential.objects.values_list("name", flat=True)) == ["ngc"]


@pytest.mark.parametrize(
    ("form", "shown"),
    [
        ({"name": "1bad", "cred_type": "GENERIC", "payload": "k=v"}, "a credential name has"),
        ({"name": "ok", "cred_type": "GENERIC", "payload": "no equals sign"}, "line 1: write key=value"),
        (
            {"name": "ok", "cred_type": "REGISTRY", "payload": "registry=nvcr.io"},
            "registry_credential.auth: is required",
        ),
        ({"name": "ok", "cred_type": "GENERIC", "payload": "a/b=v"}, "generic_credential.credential.a/b"),
    ],
)
def test_a_refused_credential_says_why_and_writes_nothing(client, ana, form, shown):
    client.force_login(ana)
    answer = client.post("/profile/credentials/", form)
    assert answer.status_code == 400 and shown in answer.content.decode()
    assert not Credential.objects.exists()


def test_another_users_credentials_are_neither_listed_nor_deletable(client, ana, demo_world):
    credentials.set_credential(ana, "mine", {"generic_credential": {"credential": {"k": "v"}}})
    client.force_login(demo_world.researcher)
    assert "mine" not in text(client.get("/profile/"))
    assert client.post("/profile/credentials/mine/delete/").status_code == 404
    assert Credential.objects.filter(name="mine").exists()


def test_the_submit_page_refuses_a_missing_credential_with_the_field(demo_world):
    client = demo_world.client(demo_world.researcher)
    spec = SPEC + "    credentials: {wandb: /etc/wandb}\n"
    answer = client.post(f"/pools/{TRAINING}/submit/preview/", {"spec": spec, "priority": "NORMAL"}, **HX)
    assert "no credential wandb" in text(answer) and "tasks[0].credentials.wandb" in text(answer)
    submitted = client.post(f"/pools/{TRAINING}/submit/", {"spec": spec, "priority": "NORMAL"})
    assert submitted.status_code == 400 and "no credential wandb" in text(submitted)
