"""The machine pool and instance type admin: saves go through the config service (one revision each), the
presets prefill the add form, errors show on the field they are about, the status and capacity are shown
read-only, the list's queries do not grow with rows; instance types are validated; the backend's OCM token is
write-only."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from clusters.machinepools.spec import MACHINEPOOL_LABEL
from clusters.models import Backend, InstanceType, MachinePool
from configs import revisions, store
from tests.factories import NodeFactory
from tests.machinepools.conftest import CLI, gpu_spot
from tests.queries import assert_constant_queries

ADD = "admin:clusters_machinepool_add"


def form(**changes) -> dict:
    """The add form as a browser posts the GPU spot pool."""
    data = {
        "name": "gpu-spot",
        "backend": str(Backend.objects.get(name="rosa-a").pk),
        "description": "",
        "instance_type": "g4dn.xlarge",
        "spot": "on",
        "max_price": "",
        "disk_size_gib": "300",
        "autoscaling": "on",
        "replicas": "0",
        "min_replicas": "0",
        "max_replicas": "3",
        "labels-key": ["node-type"],
        "labels-value": ["gpu"],
        **taint_rows(gpu_spot()["taints"]),
    }
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def taint_rows(taints: list[dict]) -> dict:
    """The taint rows as a browser posts them: one key, value and effect per row, the blank last row too."""
    rows = [*taints, {"key": "", "value": "", "effect": "NoSchedule"}]
    return {f"taints-{part}": [taint[part] for taint in rows] for part in ("key", "value", "effect")}


def test_add_from_preset_prefills_the_form(backends, admin_client):
    listing = admin_client.get(reverse("admin:clusters_machinepool_changelist")).content.decode()
    assert "Add from preset" in listing and "?preset=gpu-spot-pool" in listing
    page = admin_client.get(reverse(ADD) + "?preset=gpu-spot-pool").content.decode()
    assert 'value="gpu-spot"' in page and "PreferNoSchedule" in page and 'value="node-type"' in page
    assert '<option value="g4dn.xlarge" selected>' in page


def test_a_save_is_one_revision_through_the_config_service(backends, admin_client):
    response = admin_client.post(reverse(ADD), form())
    assert response.status_code == 302, response.content.decode()[:3000]
    assert store.show("MACHINE_POOL", "gpu-spot") == {**gpu_spot(), "replicas": None, "description": ""}
    (revision,) = revisions.history("MACHINE_POOL", "gpu-spot")
    assert revision.author_name == "root-admin (admin)"
    change = reverse("admin:clusters_machinepool_change", args=[MachinePool.objects.get().pk])
    fixed = form(autoscaling=None, replicas="2", max_price="0.5")
    assert admin_client.post(change, fixed).status_code == 302
    pool = MachinePool.objects.get()
    assert (pool.autoscaling, pool.replicas, str(pool.max_price)) == (False, 2, "0.5000")
    assert len(revisions.history("MACHINE_POOL", "gpu-spot")) == 2


# The taints as JSON text, as the form took them before the rows (still read).
JSON_TAINTS = {"taints": '[{"key": "gpu", "effect": "Sometimes"}]', "taints-key": None, "taints-value": None,
               "taints-effect": None}  # fmt: skip


def test_a_change_description_is_the_revisions_description(backends, admin_client):
    """The machine pool's and the backend's pages take a change description, as the CLI's --description."""
    assert admin_client.post(reverse(ADD), form(change_description="spot GPUs for the sweep")).status_code == 302
    assert revisions.history("MACHINE_POOL", "gpu-spot")[0].description == "spot GPUs for the sweep"
    backend = Backend.objects.get(name="rosa-a")
    url = reverse("admin:clusters_backend_change", args=[backend.pk])
    data = {"description": "the ROSA cluster", "namespace": "default", "quota_scheduler": "portal", "verify_tls": "on",
            "machine_provider": "rosa", "ocm_url": "", "ocm_cluster_id": backend.ocm_cluster_id, "ocm_token": "",
            "karpenter_node_class": "default", "change_description": "named for the on-call"}  # fmt: skip
    assert admin_client.post(url, data).status_code == 302
    assert revisions.history("BACKEND", "rosa-a")[0].description == "named for the on-call"


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"min_replicas": "4"}, "min_replicas", "is above max_replicas (3)"),
        ({"disk_size_gib": "64"}, "disk_size_gib", "Disk size (GiB) must be a whole number of GiB from 128 to 16384"),
        ({"labels-key": ["bad key!"]}, "labels", "a label name is at most 63 characters"),
        (JSON_TAINTS, "taints", "Taint 1, effect &#x27;Sometimes&#x27;: a taint&#x27;s effect is one of"),
        (
            {"taints-effect": ["NoSchedule", "Sometimes", "NoSchedule"]},
            "taints",
            "Taint 2, effect &#x27;Sometimes&#x27;: a taint&#x27;s effect is one of NoSchedule, PreferNoSchedule",
        ),
        ({"taints-key": ["nvidia.com/gpu", "bad key!", ""]}, "taints", "Taint 2, key &#x27;bad key!&#x27;:"),
        ({"taints-key": ["", "spot", ""]}, "taints", "Taint 1: the value &#x27;true&#x27; has no key"),
        ({"spot": None, "max_price": "0.5"}, "max_price", "a max price is for spot instances only"),
        ({"max_price": "-1"}, "max_price", "Max price must be a positive price in USD per hour"),
        ({"instance_type": "x9.huge"}, "instance_type", "Instance type must be one of"),
        ({"name": "GPU_spot"}, "name", "a machine pool name is a DNS label"),
    ],
)
def test_form_errors_show_on_their_field(backends, admin_client, changes, field, words):
    response = admin_client.post(reverse(ADD), form(**changes))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert field in errors, errors
    assert words in response.content.decode() or words in str(errors[field]), errors
    assert not MachinePool.objects.exists()


def test_taints_are_rows_added_edited_and_removed_one_revision_a_save(backends, admin_client):
    assert admin_client.post(reverse(ADD), form()).status_code == 302
    change = reverse("admin:clusters_machinepool_change", args=[MachinePool.objects.get().pk])
    page = admin_client.get(change).content.decode()
    assert page.count('name="taints-key"') == 3  # the two taints and a blank row to add one
    assert 'name="taints-key" value="nvidia.com/gpu"' in page
    assert '<option value="PreferNoSchedule" selected>PreferNoSchedule</option>' in page
    steps = [
        [*gpu_spot()["taints"], {"key": "team", "value": "robotics", "effect": "NoExecute"}],  # added
        [{"key": "nvidia.com/gpu", "value": "yes", "effect": "PreferNoSchedule"}],  # edited, one removed
        [],  # all removed
    ]
    for number, taints in enumerate(steps, start=2):
        response = admin_client.post(change, form(**taint_rows(taints)))
        assert response.status_code == 302, response.context["adminform"].form.errors
        assert store.show("MACHINE_POOL", "gpu-spot")["taints"] == taints
        assert len(revisions.history("MACHINE_POOL", "gpu-spot")) == number
    assert admin_client.post(change, form(**taint_rows([]))).status_code == 302  # no change: no revision
    assert len(revisions.history("MACHINE_POOL", "gpu-spot")) == 4


def test_a_refused_taint_row_is_marked_and_kept_as_posted(backends, admin_client):
    response = admin_client.post(reverse(ADD), form(**{"taints-effect": ["NoSchedule", "Sometimes", "NoSchedule"]}))
    page = response.content.decode()
    assert page.count('data-kv-row class="kv-invalid"') == 1
    assert '<option value="Sometimes" selected>Sometimes</option>' in page  # shown as posted, to be corrected


def test_rosa_refuses_an_instance_type_change_on_the_form(backends, admin_client):
    store.apply("MACHINE_POOL", "gpu-spot", gpu_spot(), CLI)
    change = reverse("admin:clusters_machinepool_change", args=[MachinePool.objects.get().pk])
    response = admin_client.post(change, form(instance_type="g5.xlarge"))
    assert "ROSA cannot change the instance type" in str(response.context["adminform"].form.errors["instance_type"])


def pool_node(pool: str, backend: str = "rosa-a", **fields):
    """A node of machine pool `pool` in the backend's inventory, as the watcher stores it."""
    labels = {MACHINEPOOL_LABEL: pool, "kubernetes.io/os": "linux"}
    return NodeFactory(backend=Backend.objects.get(name=backend), labels=labels, **fields)


def test_status_capacity_and_cost_are_shown(backends, admin_client):
    store.apply("MACHINE_POOL", "gpu-spot", gpu_spot(), CLI)
    MachinePool.objects.update(state="ready", nodes_now=1, last_answer="machine pool is ready")
    pool_node("gpu-spot"), pool_node("gpu-spot", ready=False)
    pool_node("gpu-spot", backend="karp"), pool_node("other")  # another backend's, another pool's: not counted
    page = admin_client.get(reverse("admin:clusters_machinepool_change", args=[MachinePool.objects.get().pk]))
    text = page.content.decode()
    assert "2 / 3 nodes, 2 / 3 GPUs" in text and "machine pool is ready" in text  # the inventory's count
    assert "Nodes now (inventory)" in text and "2 (1 ready)" in text
    assert "Nodes (provider, last reconcile)" in text
    # g4dn.xlarge: $0.526 an hour on demand, spot estimated at 0.35 of it, $0.18 to the cent
    assert "≈ $0.36 / $0.54 per hour spot (spot estimate: the on-demand price" in text
    assert "on-demand $1.05 / $1.58, saving 66%" in text
    listing = admin_client.get(reverse("admin:clusters_machinepool_changelist")).content.decode()
    assert "g4dn.xlarge, 1 × T4" in listing and "autoscaling 0–3" in listing
    assert "2 / 3 nodes, 2 / 3 GPUs" in listing  # the node counts themselves are on the change page


def test_the_list_queries_do_not_grow_with_rows(backends, admin_client):
    url = reverse("admin:clusters_machinepool_changelist")
    InstanceType.objects.create(name="g4dn.custom", vcpu=4, memory_mib=16384, gpu_count=1, gpu_model="T4")
    count = iter(range(100))

    def grow():
        for _ in range(5):
            name = f"pool-{next(count)}"
            store.apply("MACHINE_POOL", name, gpu_spot(instance_type="g4dn.custom"), CLI)
            pool_node(name)  # each row's inventory count: one aggregate query for the page

    grow()
    assert_constant_queries(lambda: admin_client.get(url), grow)


def test_instance_types_are_validated(db, admin_client):
    url = reverse("admin:clusters_instancetype_add")
    good = {"name": "g6.xlarge", "vcpu": "4", "memory_mib": "16384", "arch": "amd64", "gpu_count": "1",
            "gpu_model": "L4", "gpu_product": "NVIDIA-L4", "gpu_memory_mib": "23034", "hourly_price": "0.8048",
            "note": "AWS, us-east-1"}  # fmt: skip
    for changes, field in [
        ({"name": "G6 XL"}, "name"),
        ({"gpu_model": ""}, "gpu_model"),
        ({"gpu_count": "0"}, "gpu_count"),
        ({"vcpu": "0"}, "vcpu"),
        ({"hourly_price": "0"}, "hourly_price"),
    ]:
        response = admin_client.post(url, {**good, **changes})
        assert field in response.context["adminform"].form.errors, changes
    assert admin_client.post(url, good).status_code == 302
    changelist = reverse("admin:clusters_instancetype_changelist")
    listing = admin_client.get(changelist).content.decode()
    assert "1 × L4" in listing
    count = iter(range(100))

    def grow():
        for _ in range(5):
            InstanceType.objects.create(name=f"x{next(count)}.large", vcpu=2, memory_mib=8192)

    assert_constant_queries(lambda: admin_client.get(changelist), grow)


def test_the_backend_ocm_token_is_write_only(backends, admin_client):
    Backend.objects.filter(name="rosa-a").update(ocm_token="ocm-secret-token")
    backend = Backend.objects.get(name="rosa-a")
    url = reverse("admin:clusters_backend_change", args=[backend.pk])
    page = admin_client.get(url).content.decode()
    assert "ocm-secret-token" not in page and "OCM cluster id" in page
    data = {"description": "", "namespace": "default", "quota_scheduler": "portal", "verify_tls": "on",
            "machine_provider": "rosa", "ocm_url": "", "ocm_cluster_id": backend.ocm_cluster_id, "ocm_token": "",
            "karpenter_node_class": "default"}  # fmt: skip
    assert admin_client.post(url, data).status_code == 302
    assert Backend.objects.get(name="rosa-a").ocm_token == "ocm-secret-token"  # empty field kept it
    refused = admin_client.post(url, {**data, "ocm_cluster_id": ""})
    assert "ocm_cluster_id" in refused.context["adminform"].form.errors


def test_the_list_headers_name_the_capacity_type_apart_from_the_capacity(backends, admin_client):
    """The on-demand/spot column is "Capacity type" (ROSA's and Karpenter's term), not a second "Capacity"."""
    store.apply("MACHINE_POOL", "gpu-spot", gpu_spot(), CLI)
    listing = admin_client.get(reverse("admin:clusters_machinepool_changelist")).content.decode()
    headers = column_headers(listing)
    assert "Capacity type" in headers and "Capacity now / at max" in headers
    assert headers.index("Capacity type") < headers.index("Capacity now / at max")
    assert [h for h in headers if h.startswith("Capacity")] == ["Capacity type", "Capacity now / at max"]


def column_headers(page: str) -> list[str]:
    """The changelist's column headers, as the reader sees them (the text of each `<th scope="col">`)."""
    cells = re.findall(r'<th[^>]*scope="col"[^>]*>(.*?)</th>', page, flags=re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", cell).split()) for cell in cells]
