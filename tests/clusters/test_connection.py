"""Connection settings: the one ApiClient factory, kubeconfig / URL+token+CA / in-cluster, secrets kept secret."""

from __future__ import annotations

import json
import logging
from io import StringIO

import pytest
import yaml
from django.core.management import call_command

from clusters import inventory
from clusters.kube.connection import ConnectionSettings, configuration, connect
from clusters.kube.errors import KubeError
from clusters.models import Backend
from configs import store
from configs.errors import ConfigError
from configs.models import Revision
from tests.clusters.conftest import CLI

TOKEN = "s3cret-token-value"
CA = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"


def kubeconfig(server: str, *, user: dict | None = None) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "sim",
            "clusters": [{"name": "sim", "cluster": {"server": server}}],
            "users": [{"name": "me", "user": user or {"token": TOKEN}}],
            "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "me"}}],
        }
    )


def test_url_connection_sends_the_token_and_sets_timeouts(backend, kube_server):
    store.apply("BACKEND", "sim", {"namespace": "default", "api_url": kube_server.url, "token": TOKEN}, CLI)
    backend.refresh_from_db()
    kube_server.emulator.clear_request_log()
    with connect(backend) as kube:
        assert kube.timeout == (5.0, 30.0)
        assert kube.version()["gitVersion"] == "v1.33.0"
    assert list(kube_server.emulator)[-1].headers["Authorization"] == f"Bearer {TOKEN}"


def test_ca_and_tls_settings_reach_the_client_configuration():
    config = configuration(ConnectionSettings("x", "url", "https://api.example:6443/", TOKEN, CA, False))
    assert config.host == "https://api.example:6443"
    assert config.ca_cert_data == CA and config.verify_ssl is False
    assert config.retries.total == 1
    assert TOKEN not in repr(ConnectionSettings("x", "url", "https://a", TOKEN))


def test_kubeconfig_connection_syncs(backend, kube_server):
    store.apply("BACKEND", "sim", {"namespace": "default", "kubeconfig": kubeconfig(kube_server.url)}, CLI)
    backend.refresh_from_db()
    assert backend.connection == "kubeconfig"
    assert inventory.sync_backend(backend.pk).nodes == 29
    assert list(kube_server.emulator)[-1].headers["Authorization"] == f"Bearer {TOKEN}"


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"kubeconfig": "a: [b"}, "kubeconfig", "kubeconfig is not valid YAML"),
        ({"kubeconfig": "{}"}, "kubeconfig", "must be a mapping with clusters, contexts and users"),
        ({"kubeconfig": kubeconfig("https://x", user={"exec": {"command": "aws"}})}, "kubeconfig", "exec plugin"),
        ({"kubeconfig": kubeconfig("https://x"), "kube_context": "other"}, "kubeconfig", "no context 'other'"),
        ({"connection": "url"}, "api_url", "needs api_url"),
        ({"connection": "kubeconfig"}, "kubeconfig", "needs the kubeconfig content"),
        ({"connection": "ssh"}, "connection", "unknown connection"),
        ({"api_url": "https://x", "ca_cert": "not a pem"}, "ca_cert", "must be PEM"),
    ],
)
def test_bad_connection_settings_are_refused_with_the_field(db, body, field, reason):
    with pytest.raises(ConfigError) as caught:
        store.apply("BACKEND", "c", body, CLI)
    assert caught.value.field == field and reason in caught.value.reason
    assert TOKEN not in str(caught.value)


def test_in_cluster_outside_a_cluster_is_a_clean_error(db):
    backend = Backend.objects.create(name="incluster", connection="in-cluster")
    with pytest.raises(KubeError, match="not running inside a cluster") as caught:
        connect(backend)
    assert not caught.value.transient


def test_secrets_are_never_shown_and_markers_round_trip(backend, kube_server):
    store.apply("BACKEND", "sim", {"namespace": "default", "api_url": kube_server.url, "token": TOKEN}, CLI)
    shown = store.show("BACKEND", "sim")
    assert shown["token"].startswith("<set ") and TOKEN not in json.dumps(shown)
    out = StringIO()
    call_command("config", "show", "BACKEND", "sim", stdout=out)
    assert TOKEN not in out.getvalue() and "<set " in out.getvalue()

    # what was shown applies back unchanged: no write, no revision, the token is kept
    revisions = Revision.objects.count()
    assert not store.apply("BACKEND", "sim", shown, CLI).changed
    assert Revision.objects.count() == revisions
    assert Backend.objects.get(name="sim").token == TOKEN
    assert not store.apply("BACKEND", "sim", {**shown, "token": "<set>"}, CLI).changed

    # a new token is a change, recorded with a new marker, never the value
    result = store.apply("BACKEND", "sim", {**shown, "token": "another-token"}, CLI)
    assert result.changed
    assert Backend.objects.get(name="sim").token == "another-token"
    snapshots = json.dumps(list(Revision.objects.filter(config_type="BACKEND").values_list("snapshot", flat=True)))
    assert TOKEN not in snapshots and "another-token" not in snapshots
    assert store.show("BACKEND", "sim")["token"] != shown["token"]

    # secrets are not versioned: rolling back to a revision that had one keeps the stored value,
    # rolling back to one without a secret removes it
    store.rollback("BACKEND", "sim", 2, CLI)
    assert Backend.objects.get(name="sim").token == "another-token"
    store.rollback("BACKEND", "sim", 1, CLI)
    assert Backend.objects.get(name="sim").token == ""


def test_secrets_never_reach_the_logs(backend, caplog):
    backend.token = TOKEN
    backend.api_url = "http://127.0.0.1:9"
    backend.save()
    with caplog.at_level(logging.DEBUG), pytest.raises(KubeError) as caught:
        inventory.sync_backend(backend.pk)
    assert TOKEN not in caplog.text and TOKEN not in str(caught.value) and TOKEN not in repr(backend)
    backend.refresh_from_db()
    assert TOKEN not in backend.last_error
