"""`quota_scheduler` on the BACKEND config type: default, round trip through show/apply, history and
rollback, refusals, and the admin form."""

from __future__ import annotations

import pytest
from django.urls import reverse

from clusters.models import Backend
from configs import revisions, store
from configs.errors import ConfigError
from tests.clusters.conftest import CLI


def test_defaults_to_the_portal_and_round_trips(backend):
    assert backend.quota_scheduler == "portal"
    shown = store.show("BACKEND", "sim")
    assert shown["quota_scheduler"] == "portal"
    result = store.apply("BACKEND", "sim", {**shown, "quota_scheduler": "kai"}, CLI)
    assert result.changed
    assert Backend.objects.get(name="sim").quota_scheduler == "kai"
    shown = store.show("BACKEND", "sim")
    assert shown["quota_scheduler"] == "kai"
    assert not store.apply("BACKEND", "sim", shown, CLI).changed  # what show prints applies unchanged
    store.apply("BACKEND", "sim", {**shown, "quota_scheduler": "kueue"}, CLI)
    assert Backend.objects.get(name="sim").quota_scheduler == "kueue"
    store.apply("BACKEND", "sim", {**shown, "quota_scheduler": ""}, CLI)  # empty reads as the default
    assert Backend.objects.get(name="sim").quota_scheduler == "portal"


def test_an_unknown_scheduler_is_refused_and_nothing_is_written(backend):
    with pytest.raises(ConfigError) as refused:
        store.apply("BACKEND", "sim", {**store.show("BACKEND", "sim"), "quota_scheduler": "volcano"}, CLI)
    assert refused.value.field == "quota_scheduler" and refused.value.value == "volcano"
    assert refused.value.reason == "must be one of portal, kai, kueue"
    assert Backend.objects.get(name="sim").quota_scheduler == "portal"


def test_the_admin_form_offers_and_saves_it(admin_client, backend, kube_server):
    url = reverse("admin:clusters_backend_change", args=[backend.pk])
    page = admin_client.get(url).content.decode()
    assert 'name="quota_scheduler"' in page and '<option value="kueue"' in page
    form = {
        "description": "simulated",
        "namespace": "default",
        "scheduler_name": "",
        "quota_scheduler": "kai",
        "dashboard_url": "",
        "grafana_url": "",
        "connection": "url",
        "api_url": kube_server.url,
        "token": "",
        "ca_cert": "",
        "verify_tls": "on",
        "kubeconfig": "",
        "kube_context": "",
    }
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert Backend.objects.get(pk=backend.pk).quota_scheduler == "kai"
    assert store.show("BACKEND", "sim")["quota_scheduler"] == "kai"


def test_history_diff_and_rollback(backend):
    first = store.apply("BACKEND", "sim", {**store.show("BACKEND", "sim"), "description": "again"}, CLI).revision
    second = store.apply("BACKEND", "sim", {**store.show("BACKEND", "sim"), "quota_scheduler": "kueue"}, CLI).revision
    changes = revisions.diff("BACKEND", "sim", first, second).changes
    assert any("quota_scheduler" in str(change) and "kueue" in str(change) for change in changes), changes
    store.rollback("BACKEND", "sim", first, CLI)
    assert Backend.objects.get(name="sim").quota_scheduler == "portal"
