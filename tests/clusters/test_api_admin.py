"""`GET /api/resources` and the admin pages: nodes, pool capacity, backend connection, platform nodes.

Lists keep a constant number of queries whatever the number of nodes (asserted by growing the fleet).
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from clusters import inventory
from clusters.models import Backend, Node
from kubesim.fleet import node_manifest
from pools.models import Platform, Pool
from tests.clusters.conftest import running_pod
from tests.queries import queries_of

TOKEN = "admin-secret-token"


@pytest.fixture
def synced(pools_config, backend, kube_server):
    kube_server.emulator.load("pods", [running_pod("w", "h100-node-0", gpu=8, workload=True)])
    inventory.sync_backend(backend.pk)
    return backend


def grow_fleet(kube_server, backend, extra: int = 30) -> None:
    kube_server.emulator.load(
        "nodes",
        [node_manifest("h100", 100 + i, name=f"h100-extra-{i}") for i in range(extra)]
        + [node_manifest("cpu", 100 + i, name=f"cpu-extra-{i}") for i in range(extra)],
    )
    inventory.sync_backend(backend.pk)


def queries(client, url) -> int:
    def page():
        response = client.get(url)
        assert response.status_code == 200, response.content[:500]

    return len(queries_of(page))


def test_api_resources(admin_api, synced):
    response = admin_api.get("/api/resources", {"pools": "train,research"})
    assert response.status_code == 200
    data = response.json()
    assert set(data["pools"]) == {"train", "research"}
    assert data["pools"]["train"]["platforms"]["h100"]["used"]["nvidia.com/gpu"] == 8
    assert data["total"]["nodes"] == 6
    repeated = admin_api.get("/api/resources?pools=train&pools=research&platforms=h100&nodes=false").json()
    assert "resources" not in repeated and list(repeated["pools"]["research"]["platforms"]) == []
    assert list(repeated["pools"]["train"]["platforms"]) == ["h100"]


def test_api_resources_errors_and_permissions(admin_api, client, synced):
    response = admin_api.get("/api/resources", {"pools": "ghost"})
    assert response.status_code == 404
    assert response.json() == {
        "code": "pool_not_found",
        "field": "pools",
        "value": "ghost",
        "reason": "no pool named 'ghost'",
        "error_code": "NOTFOUND",
        "message": "pools 'ghost': no pool named 'ghost'",
    }
    assert client.get("/api/resources").status_code in (401, 403)


@pytest.mark.parametrize(
    ("query", "status", "field", "value"),
    [
        ("pools=", 400, "pools", ""),
        ("pools=train,,research", 400, "pools", "train,,research"),
        ("platforms=", 400, "platforms", ""),
        ("pools=gh%00ost", 400, "pools", "gh\x00ost"),  # NUL in a query: portal.api_guards
        ("pools=train&platforms=h%00", 400, "platforms", "h\x00"),
        ("pool=train", 400, "pool", "train"),  # the singular is a typo, not "every pool"
    ],
)
def test_api_resources_names_a_bad_or_empty_name(admin_api, synced, query, status, field, value):
    response = admin_api.get(f"/api/resources?{query}")
    assert response.status_code == status, response.content
    body = response.json()
    assert (body["field"], body["value"]) == (field, value) and body["reason"]


def test_api_resources_query_count_is_constant(admin_api, synced, kube_server, backend):
    few = queries(admin_api, "/api/resources")
    grow_fleet(kube_server, backend)
    assert queries(admin_api, "/api/resources") == few


def test_node_changelist_filters_and_constant_queries(admin_client, synced, kube_server, backend):
    url = reverse("admin:clusters_node_changelist")
    train = Pool.objects.get(name="train")
    h100 = Platform.objects.get(name="h100")
    for query in (
        "",
        f"?pool={train.pk}",
        f"?platform={h100.pk}",
        "?gpu_product=NVIDIA-H100-80GB-HBM3",
        "?schedulable=no",
        "?type=SHARED",
        "?type=UNUSED",
        f"?backend__id__exact={backend.pk}",
    ):
        assert admin_client.get(url + query).status_code == 200, query
    page = admin_client.get(f"{url}?type=SHARED").content.decode()
    assert "h100-node-0" in page and "cpu-node-0" not in page
    assert "8 / 8" in page  # GPUs used / allocatable
    assert "cordoned" in admin_client.get(f"{url}?schedulable=no").content.decode()
    few = queries(admin_client, url)
    few_filtered = queries(admin_client, f"{url}?pool={train.pk}&type=SHARED")
    grow_fleet(kube_server, backend)
    assert Node.objects.count() == 89  # 29 demo nodes + 60 more
    assert queries(admin_client, url) == few
    assert queries(admin_client, f"{url}?pool={train.pk}&type=SHARED") == few_filtered


def test_node_page_explains_every_platform(admin_client, synced):
    node = Node.objects.get(name="a100-node-2")
    page = admin_client.get(reverse("admin:clusters_node_change", args=[node.pk])).content.decode()
    assert "node is cordoned (unschedulable)" in page
    assert "train/h100" in page and "not a member" in page


def test_pool_capacity_list_and_page(admin_client, synced, kube_server, backend):
    url = reverse("admin:pools_poolcapacity_changelist")
    page = admin_client.get(url).content.decode()
    assert "8 / 48" in page  # train: 8 GPUs used of 48 (h100 + schedulable a100 nodes)
    few = queries(admin_client, url)
    grow_fleet(kube_server, backend)
    assert queries(admin_client, url) == few
    train = Pool.objects.get(name="train")
    detail = admin_client.get(reverse("admin:pools_poolcapacity_change", args=[train.pk])).content.decode()
    assert "train (pool)" in detail and "h100" in detail and "a100" in detail


def test_platform_page_lists_nodes_and_why_not(admin_client, synced):
    platform = Platform.objects.get(name="a100")
    page = admin_client.get(reverse("admin:pools_platform_change", args=[platform.pk])).content.decode()
    assert "2 member node(s):" in page and "a100-node-0, a100-node-1" in page
    assert "node is cordoned (unschedulable)" in page
    assert "didn&#x27;t match nodeSelector" in page or "didn't match nodeSelector" in page


def test_backend_page_never_renders_secrets_and_keeps_them(admin_client, synced, kube_server):
    Backend.objects.filter(pk=synced.pk).update(token=TOKEN)
    url = reverse("admin:clusters_backend_change", args=[synced.pk])
    page = admin_client.get(url).content.decode()
    assert TOKEN not in page and "Stored (&lt;set " in page
    form = {
        "description": "changed",
        "namespace": "default",
        "scheduler_name": "",
        "quota_scheduler": "portal",
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
    backend = Backend.objects.get(pk=synced.pk)
    assert backend.description == "changed" and backend.token == TOKEN  # empty field kept the secret
    admin_client.post(url, {**form, "clear_secrets": "on"})
    assert Backend.objects.get(pk=synced.pk).token == ""


def test_backend_form_refuses_bad_connection(admin_client, synced):
    url = reverse("admin:clusters_backend_change", args=[synced.pk])
    form = {"description": "", "namespace": "default", "connection": "url", "api_url": "", "verify_tls": "on"}
    page = admin_client.post(url, form).content.decode()
    assert "connection &#x27;url&#x27; needs api_url" in page or "connection 'url' needs api_url" in page


def test_backend_actions_test_connection_and_sync(admin_client, synced, kube_server):
    changelist = reverse("admin:clusters_backend_changelist")
    response = admin_client.post(
        changelist, {"action": "test_connection", "_selected_action": [synced.pk]}, follow=True
    )
    page = response.content.decode()
    assert "Kubernetes v1.33.0" in page and "yes list nodes (cluster)" in page
    kube_server.emulator.fail_next("list", "nodes", status=503, times=None)
    response = admin_client.post(changelist, {"action": "sync_inventory", "_selected_action": [synced.pk]}, follow=True)
    assert "sync failed, inventory left as it was: listing nodes: HTTP 503" in response.content.decode()
    listed = admin_client.get(changelist).content.decode()
    assert "degraded" in listed
    detail = admin_client.get(reverse("admin:clusters_backend_change", args=[synced.pk])).content.decode()
    assert "listing nodes: HTTP 503" in detail  # last error with its time


def test_backend_detail_action_buttons(admin_client, synced):
    url = reverse("admin:clusters_backend_test_connection_detail", args=[synced.pk])
    response = admin_client.post(url, follow=True)
    assert "Kubernetes v1.33.0" in response.content.decode()


def test_backend_test_connection_on_get_only_asks_for_confirmation(admin_client, synced):
    url = reverse("admin:clusters_backend_test_connection_detail", args=[synced.pk])
    Backend.objects.filter(pk=synced.pk).update(server_version="")
    page = admin_client.get(url)
    html = page.content.decode()
    assert page.status_code == 200 and f"Test the connection to {synced.name}?" in html
    assert '<form method="post"' in html and "csrfmiddlewaretoken" in html and 'id="confirm-submit"' in html
    assert Backend.objects.get(pk=synced.pk).server_version == ""  # nothing was contacted or recorded


def test_backend_sync_on_get_only_asks_and_a_post_without_csrf_is_refused(synced, kube_server, admin_user):
    from django.test import Client

    kube_server.emulator.delete("nodes", "cpu-node-3")
    url = reverse("admin:clusters_backend_sync_inventory_detail", args=[synced.pk])
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    page = browser.get(url)
    assert page.status_code == 200 and f"Sync the inventory of {synced.name} now?" in page.content.decode()
    assert Node.objects.filter(name="cpu-node-3").exists()  # GET changed nothing
    assert browser.post(url).status_code == 403  # no CSRF token: refused, nothing synced
    assert Node.objects.filter(name="cpu-node-3").exists()
    token = page.context["csrf_token"]
    done = browser.post(url, {"csrfmiddlewaretoken": str(token)}, follow=True)
    assert done.status_code == 200 and "1 gone" in done.content.decode()
    assert not Node.objects.filter(name="cpu-node-3").exists()


def test_demo_templates_give_every_demo_platform_member_nodes(demo_pools, kube_server):
    """The shipped demo (pools/demo) against the demo fleet (kubesim.fleet), as `make dev` runs it."""
    Backend.objects.update(api_url=kube_server.url)
    for backend in Backend.objects.all():
        inventory.sync_backend(backend.pk)
    empty = [str(p) for p in Platform.objects.select_related("pool") if not p.memberships.exists()]
    assert empty == []


def test_api_resources_for_a_researcher_with_resources_read(synced):
    from rest_framework.test import APIClient

    from access.services import roles
    from configs.revisions import Actor
    from tests.factories import UserFactory

    user = UserFactory(username="researcher-1")
    roles.ensure_builtin_roles()
    roles.update_user_roles(user, add=["osmo-user"], actor=Actor(name="tester", source="cli"))  # has resources:Read
    api = APIClient()
    api.force_authenticate(user)
    assert api.get("/api/resources", {"pools": "train"}).status_code == 200


def test_backend_add_page_with_a_connection(admin_client, db, kube_server):
    url = reverse("admin:clusters_backend_add")
    assert admin_client.get(url).status_code == 200
    form = {
        "name": "new-cluster",
        "description": "",
        "namespace": "default",
        "scheduler_name": "",
        "quota_scheduler": "portal",
        "dashboard_url": "",
        "grafana_url": "",
        "connection": "url",
        "api_url": kube_server.url,
        "token": TOKEN,
        "ca_cert": "",
        "verify_tls": "on",
        "kubeconfig": "",
        "kube_context": "",
    }
    response = admin_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    backend = Backend.objects.get(name="new-cluster")
    assert backend.token == TOKEN and backend.connection == "url"
    snapshot = backend_revision_snapshot("new-cluster")
    assert snapshot["token"].startswith("<set ") and TOKEN not in str(snapshot)


def backend_revision_snapshot(name: str) -> dict:
    from configs.models import Revision

    return Revision.objects.filter(config_type="BACKEND", name=name).latest("revision").snapshot
