"""The MACHINE_POOL config type: its document (replicas or autoscaling, labels, taints, spot price, disk),
validation naming field, value and reason at the service and over REST (400, never 500), the database checks
(backend, instance type from the catalog, ROSA's fixed instance type), and the BACKEND provider settings."""

from __future__ import annotations

from decimal import Decimal

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from clusters import inventory
from clusters.machinepools.presets import ADDITIONAL_WORKER_POOL
from clusters.models import Backend, InstanceType, MachinePool
from configs import revisions, store
from configs.errors import ConfigError, ConfigInUse
from tests.machinepools.conftest import CLI, OCM_ID, gpu_spot
from tests.queries import assert_constant_queries


def refused(name: str, body: dict) -> ConfigError:
    with pytest.raises(ConfigError) as error:
        store.apply("MACHINE_POOL", name, body, CLI)
    assert not MachinePool.objects.filter(name=name).exists() or name == "gpu-spot"
    return error.value


def test_the_seed_gpu_spot_pool_round_trips(backends):
    result = store.apply("MACHINE_POOL", "gpu-spot", gpu_spot(), CLI)
    assert result.created and result.revision == 1
    pool = MachinePool.objects.get(name="gpu-spot")
    assert (pool.autoscaling, pool.min_replicas, pool.max_replicas, pool.replicas) == (True, 0, 3, 0)
    assert pool.spot and pool.max_price is None and pool.disk_size_gib == 300
    assert pool.state == MachinePool.State.PENDING and pool.backend.name == "rosa-a"
    shown = store.show("MACHINE_POOL", "gpu-spot")
    assert shown == {**gpu_spot(), "replicas": None}
    assert not store.apply("MACHINE_POOL", "gpu-spot", shown, CLI).changed  # show → update writes nothing
    spec = pool.spec()
    assert spec.node_labels()["node.kubernetes.io/machinepool"] == "gpu-spot"
    assert [t["key"] for t in spec.tolerations()] == ["nvidia.com/gpu", "spot"]


def test_fixed_replicas_a_price_and_a_pool_without_provider(backends):
    body = {"backend": "plain", "instance_type": "m5.xlarge", "replicas": 2, "spot": True, "max_price": 0.35}
    store.apply("MACHINE_POOL", "fixed", body, CLI)
    pool = MachinePool.objects.get(name="fixed")
    assert (pool.autoscaling, pool.replicas, pool.max_price) == (False, 2, Decimal("0.35"))
    assert pool.state == MachinePool.State.EXPORT_ONLY  # nobody provisions it: export only
    shown = store.show("MACHINE_POOL", "fixed")
    assert (shown["replicas"], shown["autoscaling"], shown["max_price"]) == (2, None, "0.35")
    assert not store.apply("MACHINE_POOL", "fixed", {**body, "max_price": "0.3500"}, CLI).changed


@pytest.mark.parametrize(
    ("changes", "field", "value", "words"),
    [
        ({"autoscaling": {"min_replicas": 4, "max_replicas": 3}}, "autoscaling.min_replicas", 4, "above max_replicas"),
        ({"replicas": 2}, "replicas", 2, "either replicas"),
        ({"autoscaling": None}, "autoscaling", None, "give replicas"),
        ({"autoscaling": {"min_replicas": 0}}, "autoscaling.max_replicas", None, "needs max_replicas"),
        ({"autoscaling": {"min_replicas": -1, "max_replicas": 3}}, "autoscaling.min_replicas", -1, "integer ≥ 0"),
        ({"labels": {"bad key!": "x"}}, "labels.bad key!", "bad key!", "label name"),
        ({"labels": {"Example.com/a": "x"}}, "labels.Example.com/a", "Example.com/a", "prefix"),
        ({"labels": {"team": "-data"}}, "labels.team", "-data", "label value"),
        ({"labels": {"team": True}}, "labels.team", True, "a label value is a string"),
        ({"labels": {"node.kubernetes.io/machinepool": "x"}}, "labels.node.kubernetes.io/machinepool",
         "node.kubernetes.io/machinepool", "set by the portal"),
        ({"taints": [{"key": "gpu", "value": "true", "effect": "NoEvict"}]}, "taints[0].effect", "NoEvict",
         "NoSchedule, PreferNoSchedule, NoExecute"),
        ({"taints": [{"key": "a b", "effect": "NoSchedule"}]}, "taints[0].key", "a b", "label name"),
        ({"taints": [{"key": "gpu", "value": "true", "schedule_type": "NoSchedule"}]}, "taints[0].schedule_type",
         "NoSchedule", "called effect"),
        ({"taints": [{"key": "gpu", "effect": "NoSchedule"}, {"key": "gpu", "effect": "NoSchedule"}]},
         "taints[1].key", "gpu", "second taint"),
        ({"disk_size": -5}, "disk_size", -5, "from 128 to 16384"),
        ({"disk_size": 100}, "disk_size", 100, "ROSA's root volume limits"),
        ({"disk_size": 20000}, "disk_size", 20000, "from 128 to 16384"),
        ({"max_price": "cheap"}, "max_price", "cheap", "must be a price"),
        ({"max_price": -1}, "max_price", -1, "positive decimal"),
        ({"max_price": "0.123456"}, "max_price", "0.123456", "at most 4 decimals"),
        ({"spot": False, "max_price": "0.5"}, "max_price", "0.5", "for spot instances only"),
        ({"instance_type": ""}, "instance_type", "", "needs an instance type"),
        ({"backend": "nowhere"}, "backend", "nowhere", "unknown backend"),
        ({"colour": "red"}, "colour", "colour", "unknown field"),
    ],
)  # fmt: skip
def test_bad_input_names_field_value_and_reason(backends, changes, field, value, words):
    error = refused("gpu-spot", gpu_spot(**changes))
    assert (error.field, error.value) == (field, value), error
    assert words in error.reason, error.reason


def test_an_unknown_instance_type_is_refused_with_the_known_ones(backends):
    error = refused("gpu-spot", gpu_spot(instance_type="g4dn.huge"))
    assert (error.field, error.value) == ("instance_type", "g4dn.huge")
    assert "known: " in error.reason and "g4dn.xlarge" in error.reason and "m5.xlarge" in error.reason
    InstanceType.objects.create(name="g4dn.huge", vcpu=8, memory_mib=32768, gpu_count=1, gpu_model="T4")
    assert store.apply("MACHINE_POOL", "gpu-spot", gpu_spot(instance_type="g4dn.huge"), CLI).created  # added


def test_a_bad_name_is_refused(backends):
    with pytest.raises(ConfigError) as error:
        store.apply("MACHINE_POOL", "GPU_Spot", gpu_spot(), CLI)
    assert error.value.field == "name" and "DNS label" in error.value.reason


@pytest.mark.parametrize(("backend", "allowed"), [("rosa-a", False), ("karp", True), ("plain", True)])
def test_changing_the_instance_type_where_the_provider_forbids_it(backends, backend, allowed):
    store.apply("MACHINE_POOL", "gpu-spot", gpu_spot(backend), CLI)
    changed = gpu_spot(backend, instance_type="g5.xlarge")
    if allowed:
        assert store.apply("MACHINE_POOL", "gpu-spot", changed, CLI).changed
        return
    error = refused("gpu-spot", changed)
    assert (error.field, error.value) == ("instance_type", "g5.xlarge")
    assert error.reason.startswith("ROSA cannot change the instance type of an existing machine pool")
    assert MachinePool.objects.get(name="gpu-spot").instance_type == "g4dn.xlarge"  # nothing half-written


def test_a_pool_stays_on_its_backend_and_a_backend_with_pools_is_not_deleted(backends):
    store.apply("MACHINE_POOL", "gpu-spot", gpu_spot(), CLI)
    error = refused("gpu-spot", gpu_spot("karp"))
    assert error.field == "backend" and "stays on its backend (rosa-a)" in error.reason
    with pytest.raises(ConfigInUse) as in_use:
        store.delete("BACKEND", "rosa-a", CLI)
    assert "machine pool gpu-spot" in in_use.value.reason


def test_backend_machine_provider_settings(db):
    store.apply("BACKEND", "rosa-a", {"machine_provider": "rosa", "ocm_cluster_id": OCM_ID, "ocm_token": "t0k"}, CLI)
    backend = Backend.objects.get(name="rosa-a")
    assert (backend.machine_provider, backend.ocm_url, backend.ocm_token) == (
        "rosa",
        "https://api.openshift.com",
        "t0k",
    )
    shown = store.show("BACKEND", "rosa-a")
    assert shown["ocm_token"].startswith("<set ") and "t0k" not in str(shown)
    assert not store.apply("BACKEND", "rosa-a", shown, CLI).changed  # the marker keeps the stored token
    assert Backend.objects.get(name="rosa-a").ocm_token == "t0k"
    for body, field in [
        ({"machine_provider": "rosa"}, "ocm_cluster_id"),
        ({"machine_provider": "gke"}, "machine_provider"),
        ({"machine_provider": "rosa", "ocm_cluster_id": "x", "ocm_url": "ftp://ocm"}, "ocm_url"),
        ({"machine_provider": "karpenter", "karpenter_node_class": None}, None),
    ]:
        if field is None:
            store.apply("BACKEND", "k", body, CLI)  # an empty node class reads as its default
            assert Backend.objects.get(name="k").karpenter_node_class == "default"
            continue
        with pytest.raises(ConfigError) as error:
            store.apply("BACKEND", "other", body, CLI)
        assert error.value.field == field


def test_the_rest_doors_history_and_rollback(backends, admin_api):
    url = "/api/configs/machine_pool/additional"
    body = ADDITIONAL_WORKER_POOL.document("rosa-a")
    answer = admin_api.put(url, {"configs": body, "description": "first"}, format="json")
    assert answer.status_code == 200, answer.json()
    answer = admin_api.patch(url, {"configs_dict": {"autoscaling": {"max_replicas": 8}}}, format="json")
    assert answer.status_code == 200, answer.json()
    assert admin_api.get(url).json()["autoscaling"] == {"min_replicas": 1, "max_replicas": 8}
    bad = admin_api.put(
        url, {"configs": {**body, "autoscaling": {"min_replicas": 9, "max_replicas": 8}}}, format="json"
    )
    assert bad.status_code == 400
    assert {k: bad.json()[k] for k in ("field", "value")} == {"field": "autoscaling.min_replicas", "value": 9}
    unknown = admin_api.put(url, {"configs": {**body, "instance_type": "x1.nope"}}, format="json")
    assert unknown.status_code == 400 and "m5.xlarge" in unknown.json()["reason"]
    history = admin_api.get("/api/configs/history", {"config_types": "machine_pool", "name": "additional"})
    assert history.status_code == 200 and len(history.json()["configs"]) == 2, history.json()
    back = admin_api.post(
        "/api/configs/history/rollback",
        {"config_type": "machine_pool", "name": "additional", "revision": 1},
        format="json",
    )
    assert back.status_code == 200, back.json()
    assert MachinePool.objects.get(name="additional").max_replicas == 5
    assert admin_api.get("/api/configs/machine_pool").json().keys() == {"additional"}
    assert admin_api.delete(url).status_code == 200
    assert not MachinePool.objects.exists()


def test_the_ocm_token_is_stored_encrypted_and_reencrypted(db, settings):
    old_key, new_key = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.FIELD_ENCRYPTION_KEYS = [old_key]
    store.apply("BACKEND", "rosa-a", {"machine_provider": "rosa", "ocm_cluster_id": OCM_ID, "ocm_token": "t0k"}, CLI)
    assert "t0k" not in stored_ocm_token()
    settings.FIELD_ENCRYPTION_KEYS = [new_key, old_key]
    assert inventory.reencrypt_secrets() == (1, [])
    assert Fernet(new_key.encode()).decrypt(stored_ocm_token().removeprefix("fernet:").encode()) == b"t0k"
    settings.FIELD_ENCRYPTION_KEYS = [new_key]
    assert Backend.objects.get(name="rosa-a").ocm_token == "t0k"


def stored_ocm_token() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT ocm_token FROM clusters_backend WHERE name = 'rosa-a'")
        return cursor.fetchone()[0]


def test_a_type_rollback_restores_every_machine_pool(backends):
    store.apply("MACHINE_POOL", "gpu-spot", gpu_spot(), CLI)
    first = revisions.get_revision("MACHINE_POOL", "gpu-spot", 1).change.revision
    store.apply("MACHINE_POOL", "gpu-spot", gpu_spot(labels={"node-type": "gpu", "team": "vision"}), CLI)
    store.apply("MACHINE_POOL", "additional", ADDITIONAL_WORKER_POOL.document("rosa-a"), CLI)
    store.restore("MACHINE_POOL", first, CLI)
    assert list(MachinePool.objects.values_list("name", "labels")) == [("gpu-spot", {"node-type": "gpu"})]


def test_listing_every_machine_pool_costs_the_same_queries(backends, admin_api):
    count = iter(range(100))

    def grow():
        for _ in range(4):
            store.apply("MACHINE_POOL", f"pool-{next(count)}", gpu_spot(), CLI)

    grow()
    assert_constant_queries(lambda: admin_api.get("/api/configs/machine_pool"), grow)


def test_karpenter_takes_no_max_price_and_its_disk_is_the_node_class(backends):
    error = refused("gpu-spot", gpu_spot("karp", max_price="0.3"))
    assert (error.field, error.value) == ("max_price", "0.3") and "Karpenter takes no spot max price" in error.reason
    result = store.apply("MACHINE_POOL", "gpu-spot", gpu_spot("karp", disk_size=500), CLI)
    assert result.warnings == ["disk_size: on Karpenter the root volume is the EC2NodeClass's (karp's "
                               "karpenter_node_class), not 500 GiB"]  # fmt: skip
