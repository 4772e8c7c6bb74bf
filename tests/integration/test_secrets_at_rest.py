"""Backend secrets are stored encrypted (portal.secrets) and read back as text; keys rotate; a value no key
opens is refused by the adapter with a clear message and never overwritten."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import connection

from clusters import inventory
from clusters.kube.connection import ConnectionSettings, configuration
from clusters.kube.errors import KubeError
from clusters.models import Backend
from configs import store
from configs.revisions import Actor

pytestmark = pytest.mark.django_db
CLI = Actor(name="tester", source="cli")
TOKEN = "eyJhbGciOiJSUzI1NiJ9.cluster-admin-token"
KUBECONFIG = "apiVersion: v1\nkind: Config\nclusters: []\n"


def stored(name: str) -> tuple[str, str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT token, kubeconfig FROM clusters_backend WHERE name = %s", [name])
        return cursor.fetchone()


@pytest.fixture
def backend() -> Backend:
    store.apply(
        "BACKEND",
        "gpu-cluster",
        {"namespace": "jobs", "connection": "url", "api_url": "https://127.0.0.1:6443", "token": TOKEN},
        CLI,
    )
    return Backend.objects.get(name="gpu-cluster")


def test_the_database_holds_ciphertext_and_the_code_sees_text(backend):
    token, _ = stored("gpu-cluster")
    assert token.startswith("fernet:") and TOKEN not in token
    assert Backend.objects.get(pk=backend.pk).token == TOKEN
    assert configuration(ConnectionSettings.of(backend)).api_key == {"authorization": f"Bearer {TOKEN}"}
    backend.save()  # a save re-encrypts (another ciphertext), never double-encrypts
    again, _ = stored("gpu-cluster")
    assert again != token and Backend.objects.get(pk=backend.pk).token == TOKEN


def test_rotation_new_key_first_old_keys_still_read(backend, settings):
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old_key]
    backend.save()
    settings.FIELD_ENCRYPTION_KEYS = [new_key, old_key]
    assert Backend.objects.get(pk=backend.pk).token == TOKEN
    call_command("backend", "reencrypt")
    token, _ = stored("gpu-cluster")
    assert Fernet(new_key.encode()).decrypt(token.removeprefix("fernet:").encode()).decode() == TOKEN
    settings.FIELD_ENCRYPTION_KEYS = [new_key]
    assert Backend.objects.get(pk=backend.pk).token == TOKEN


def test_a_secret_no_key_opens_is_refused_and_kept(backend, settings):
    original, _ = stored("gpu-cluster")
    settings.FIELD_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    lost = Backend.objects.get(pk=backend.pk)
    with pytest.raises(KubeError) as refused:
        configuration(ConnectionSettings.of(lost))
    assert refused.value.field == "token" and "FIELD_ENCRYPTION_KEYS" in str(refused.value)
    lost.description = "edited while the key was wrong"
    lost.save()  # must not destroy the secret
    assert stored("gpu-cluster")[0] == original
    assert inventory.reencrypt_secrets() == (0, ["gpu-cluster"])
    settings.FIELD_ENCRYPTION_KEYS = []
    assert Backend.objects.get(pk=backend.pk).token == TOKEN


def test_plain_text_from_before_encryption_is_read_then_encrypted(backend):
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE clusters_backend SET token = %s, kubeconfig = %s WHERE id = %s", [TOKEN, KUBECONFIG, backend.pk]
        )
    assert (Backend.objects.get(pk=backend.pk).token, Backend.objects.get(pk=backend.pk).kubeconfig) == (
        TOKEN,
        KUBECONFIG,
    )
    assert inventory.reencrypt_secrets() == (1, [])
    token, kubeconfig = stored("gpu-cluster")
    assert token.startswith("fernet:") and kubeconfig.startswith("fernet:")
    assert Backend.objects.get(pk=backend.pk).kubeconfig == KUBECONFIG


def test_a_malformed_key_is_a_configuration_error(backend, settings):
    settings.FIELD_ENCRYPTION_KEYS = ["not-a-fernet-key"]
    with pytest.raises(ImproperlyConfigured, match="FIELD_ENCRYPTION_KEYS"):
        Backend.objects.get(pk=backend.pk)
