"""Provider limits known before the provider refuses (issue #33): every new machine pool field (zones, subnets,
security groups, AWS tags, Karpenter requirements, limits, disruption) and the providers' own bounds (ROSA's
node caps per topology and per cluster, multi-AZ multiples of 3, region offerings) are refused at every door
(config store, CLI `config update`, REST config API, admin form) naming field, value and limit, and nothing is
written; what is accepted is stored, shown back and sent to the provider."""

from __future__ import annotations

import json

import pytest
from django.core.management import base
from django.urls import reverse

from clusters.machinepools.providers import karpenter, rosa
from clusters.machinepools.providers.base import differences
from clusters.models import Backend, MachinePool
from configs import store
from configs.errors import ConfigError
from configs.models import Revision
from tests.clirun import run_as_cli
from tests.machinepools.conftest import CLI, gpu_spot
from tests.machinepools.test_admin import form

ZONES = ["us-east-1a", "us-east-1b", "us-east-1c"]
SG = "sg-0a1b2c3d4e5f60718"
SUBNET = "subnet-0a1b2c3d4e5f60718"


@pytest.fixture
def limits_backends(backends):
    """Besides the shared ones: a ROSA Classic backend in us-east-1 (`classic`)."""
    store.apply(
        "BACKEND",
        "classic",
        {"machine_provider": "rosa", "ocm_cluster_id": "c1", "rosa_topology": "classic", "aws_region": "us-east-1"},
        CLI,
    )


def scaling(low: int, high: int) -> dict:
    return {"autoscaling": {"min_replicas": low, "max_replicas": high}}


# (backend, changes to the GPU spot pool, field, words of the reason)
REFUSED = [
    # syntax, whatever the provider
    ("rosa-a", {"availability_zones": ["us-east-1"]}, "availability_zones[0]", "an AWS availability zone name"),
    ("rosa-a", {"availability_zones": ["us-east-1a", "us-east-1a"]}, "availability_zones[1]", "given twice"),
    ("rosa-a", {"subnets": ["subnet-xyz"]}, "subnets[0]", "an AWS subnet id"),
    ("rosa-a", {"security_groups": ["sg-1"]}, "security_groups[0]", "an AWS security group id"),
    ("rosa-a", {"security_groups": [f"sg-{i:08x}" for i in range(11)]}, "security_groups", "at most 10"),
    ("rosa-a", {"aws_tags": {"aws:owner": "me"}}, "aws_tags.aws:owner", "reserved for AWS"),
    ("rosa-a", {"aws_tags": {"team": ""}}, "aws_tags.team", "a tag value is 1 to 256"),
    ("rosa-a", {"aws_tags": {"cost#center": "ml"}}, "aws_tags.cost#center", "a tag key is 1 to 128"),
    ("rosa-a", {"aws_tags": {f"k{i}": "v" for i in range(51)}}, "aws_tags", "AWS allows at most 50"),
    ("karp", {"requirements": [{"key": "a", "operator": "Like", "values": ["b"]}]}, "requirements[0].operator",
     "must be one of In, NotIn, Exists, DoesNotExist, Gt, Lt"),
    ("karp", {"requirements": [{"key": "a", "operator": "In"}]}, "requirements[0].values", "needs at least one"),
    ("karp", {"requirements": [{"key": "a", "operator": "Gt", "values": ["x"]}]}, "requirements[0].values",
     "single non-negative integer"),
    ("karp", {"requirements": [{"key": "a", "operator": "Exists", "values": ["b"]}]}, "requirements[0].values",
     "takes no values"),
    ("karp", {"requirements": [{"key": "kubernetes.io/hostname", "operator": "Exists"}]}, "requirements[0].key",
     "restricted by Karpenter"),
    ("karp", {"requirements": [{"key": "kubernetes.io/team", "operator": "Exists"}]}, "requirements[0].key",
     "a domain Karpenter restricts"),
    ("karp", {"requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "Exists"}]},
     "requirements[0].key", "written by the portal from instance_type"),
    ("karp", {"requirements": [{"key": "a", "operator": "Exists"}] * 101}, "requirements", "at most 100"),
    ("karp", {"limits": {"pods": "10"}}, "limits.pods", "limits take cpu, memory, nvidia.com/gpu"),
    ("karp", {"limits": {"cpu": "lots"}}, "limits.cpu", "positive Kubernetes quantity"),
    ("karp", {"disruption": {"consolidationPolicy": "Always"}}, "disruption.consolidationPolicy",
     "WhenEmpty, WhenEmptyOrUnderutilized"),
    ("karp", {"disruption": {"consolidateAfter": "5d"}}, "disruption.consolidateAfter", '"Never"'),
    ("karp", {"disruption": {"budgets": [{"nodes": "150%"}]}}, "disruption.budgets[0].nodes", "up to 100%"),
    ("karp", {"disruption": {"budgets": [{"nodes": "1", "schedule": "@daily"}]}}, "disruption.budgets[0].schedule",
     "'schedule' must be set with 'duration'"),
    ("karp", {"disruption": {"budgets": [{"nodes": "1", "reasons": ["Bored"]}]}}, "disruption.budgets[0].reasons[0]",
     "Underutilized, Empty, Drifted"),
    ("karp", {"disruption": {"budgets": [{"nodes": "1"}] * 51}}, "disruption.budgets", "at most 50"),
    # the providers' own bounds
    ("rosa-a", scaling(0, 100000), "autoscaling.max_replicas", "from 1 to 500"),
    ("classic", scaling(0, 300), "autoscaling.max_replicas", "ROSA Classic allows at most 249 nodes per cluster"),
    ("classic", {"autoscaling": None, "replicas": 250}, "replicas", "ROSA Classic allows at most 249"),
    ("classic", {**scaling(0, 4), "availability_zones": ZONES}, "autoscaling.max_replicas", "a multiple of 3"),
    ("classic", {**scaling(1, 6), "availability_zones": ZONES}, "autoscaling.min_replicas", "a multiple of 3"),
    ("classic", {"availability_zones": ["eu-west-1a"]}, "availability_zones[0]", "not in the cluster's region"),
    ("classic", {"availability_zones": ZONES[:2]}, "availability_zones", "single-AZ (one zone) or multi-AZ"),
    ("rosa-a", {"availability_zones": ZONES}, "availability_zones", "hosted control planes lives in one"),
    ("rosa-a", {"subnets": [SUBNET, "subnet-0a1b2c3d"]}, "subnets", "takes one subnet"),
    ("rosa-a", {"requirements": [{"key": "a", "operator": "Exists"}]}, "requirements", "is Karpenter's"),
    ("rosa-a", {"disruption": {"consolidateAfter": "1m"}}, "disruption", "is Karpenter's"),
    ("karp", {"subnets": [SUBNET]}, "subnets", "EC2NodeClass's (subnetSelectorTerms)"),
    ("karp", {"security_groups": [SG]}, "security_groups", "EC2NodeClass's (securityGroupSelectorTerms)"),
    ("karp", {"aws_tags": {"team": "ml"}}, "aws_tags", "EC2NodeClass's (tags)"),
    ("karp", {"autoscaling": None, "replicas": 2, "limits": {"cpu": "8"}}, "limits", "static NodePools"),
    ("classic", {"instance_type": "g5.xlarge", "availability_zones": []}, "instance_type", None),
]  # fmt: skip
IDS = [f"{backend}-{field}-{index}" for index, (backend, _, field, _) in enumerate(REFUSED)]


def body_of(changes: dict, backend: str) -> dict:
    body = gpu_spot(backend, **changes)
    if backend == "karp":
        body["disk_size"] = 300
    if body.get("autoscaling") is None and "replicas" in changes:
        body.pop("autoscaling")
    return body


def nothing_written() -> None:
    assert not MachinePool.objects.exists()
    assert not Revision.objects.filter(config_type="MACHINE_POOL").exists()


@pytest.mark.parametrize(("backend", "changes", "field", "words"), REFUSED, ids=IDS)
def test_the_config_store_refuses_naming_field_and_limit(limits_backends, backend, changes, field, words):
    if words is None:  # the region case
        Backend.objects.filter(name="classic").update(aws_region="af-south-1")
        words = "is not offered in classic's region af-south-1"
    with pytest.raises(ConfigError) as refused:
        store.apply("MACHINE_POOL", "gpu-spot", body_of(changes, backend), CLI)
    assert refused.value.field == field, refused.value
    assert words in refused.value.reason, refused.value.reason
    nothing_written()


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    return lambda *args: run_as_cli(capsys, "pools", "config", *args)


@pytest.mark.parametrize(
    "index", [0, 2, 3, 5, 9, 17, 19, 22, 25, 26, 28, 36], ids=lambda i: IDS[i]
)  # one or more per new field, and the caps
def test_the_cli_refuses_on_one_line_and_writes_nothing(limits_backends, cli, tmp_path, index):
    backend, changes, field, words = REFUSED[index]
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(body_of(changes, backend)))
    code, out, err = cli("update", "MACHINE_POOL", "gpu-spot", "--file", str(path))
    assert (code, out) == (1, "") and err.startswith(f"error: {field}: ") and err.count("\n") == 1, err
    assert words in err and "(value: " in err
    nothing_written()


@pytest.mark.parametrize("index", [1, 4, 6, 10, 18, 21, 25, 27, 29, 33, 37, 39], ids=lambda i: IDS[i])
def test_the_rest_api_refuses_with_field_and_value_and_writes_nothing(limits_backends, admin_api, index):
    backend, changes, field, words = REFUSED[index]
    answer = admin_api.put("/api/configs/machine_pool/gpu-spot", {"configs": body_of(changes, backend)}, format="json")
    assert answer.status_code == 400, answer.json()
    assert answer.json()["field"] == field and words in answer.json()["reason"], answer.json()
    nothing_written()


@pytest.mark.parametrize(
    ("backend", "changes", "field", "words"),
    [
        ("rosa-a", {"availability_zones": '["us-east-1"]'}, "availability_zones", "an AWS availability zone name"),
        ("rosa-a", {"subnets": '["subnet-xyz"]'}, "subnets", "an AWS subnet id"),
        ("rosa-a", {"security_groups": '["sg-1"]'}, "security_groups", "an AWS security group id"),
        ("rosa-a", {"aws_tags": '{"aws:owner": "me"}'}, "aws_tags", "reserved for AWS"),
        ("karp", {"requirements": '[{"key": "a", "operator": "Like", "values": ["b"]}]'}, "requirements",
         "must be one of In, NotIn"),
        ("karp", {"limits": '{"cpu": "lots"}'}, "limits", "positive Kubernetes quantity"),
        ("karp", {"disruption": '{"consolidateAfter": "5d"}'}, "disruption", "a duration in s, m or h"),
        ("rosa-a", {"max_replicas": "100000"}, "max_replicas", "500"),
        ("classic", {"max_replicas": "300"}, "max_replicas", "ROSA Classic allows at most 249 nodes per cluster"),
        ("classic", {"max_replicas": "4", "availability_zones": json.dumps(ZONES)}, "max_replicas",
         "a multiple of 3"),
        ("rosa-a", {"requirements": '[{"key": "a", "operator": "Exists"}]'}, "requirements", "is Karpenter&#x27;s"),
    ],
)  # fmt: skip
def test_the_admin_form_refuses_on_the_field_and_writes_nothing(
    limits_backends, admin_client, backend, changes, field, words
):
    data = form(backend=str(Backend.objects.get(name=backend).pk), **changes)
    response = admin_client.post(reverse("admin:clusters_machinepool_add"), data)
    assert response.status_code == 200, response
    errors = response.context["adminform"].form.errors
    assert field in errors, errors
    assert words in response.content.decode() or words in str(errors[field]), errors[field]
    nothing_written()


def test_accepted_fields_are_stored_shown_and_sent_to_rosa(limits_backends):
    body = gpu_spot(
        "classic",
        **scaling(0, 6),
        availability_zones=ZONES,
        security_groups=[SG],
        aws_tags={"cost-center": "ml research"},
    )
    store.apply("MACHINE_POOL", "gpu-spot", body, CLI)
    shown = store.show("MACHINE_POOL", "gpu-spot")
    assert (shown["availability_zones"], shown["security_groups"], shown["aws_tags"]) == (
        ZONES,
        [SG],
        {"cost-center": "ml research"},
    )
    assert "requirements" not in shown and "subnets" not in shown  # empty settings are left out
    spec = MachinePool.objects.get().spec()
    sent = rosa.ocm_body(spec)
    assert sent["availability_zones"] == ZONES and "subnets" not in sent
    assert sent["aws"]["additional_security_group_ids"] == [SG]
    assert sent["aws"]["tags"] == {"cost-center": "ml research"} and "spot_market_options" in sent["aws"]
    assert differences(spec, rosa.observed({**sent, "status": {}}).spec, rosa.RosaProvider.fields) == []


def test_rosa_counts_the_cluster_s_other_machine_pools(limits_backends):
    store.apply("MACHINE_POOL", "big", gpu_spot("classic", **scaling(0, 200)), CLI)
    with pytest.raises(ConfigError) as refused:
        store.apply("MACHINE_POOL", "more", gpu_spot("classic", **scaling(0, 50)), CLI)
    assert refused.value.field == "autoscaling.max_replicas"
    assert "other machine pools may have 200 nodes; with 50 more it would exceed ROSA Classic's 249" in str(
        refused.value
    )
    assert not MachinePool.objects.filter(name="more").exists()
    store.apply("MACHINE_POOL", "more", gpu_spot("classic", **scaling(0, 49)), CLI)  # 249 in all: the cap
    store.apply("MACHINE_POOL", "big", gpu_spot("classic", **scaling(0, 150)), CLI)  # a pool's own change


def test_karpenter_fields_are_stored_and_written_into_the_nodepool(limits_backends):
    body = gpu_spot(
        "karp",
        availability_zones=["us-east-1a"],
        requirements=[
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]},
            {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
            {"key": "team", "operator": "Exists"},
        ],
        limits={"cpu": 64},
        disruption={"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "5m",
                    "budgets": [{"nodes": "10%"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}]},
    )  # fmt: skip
    store.apply("MACHINE_POOL", "gpu-spot", body, CLI)
    assert store.show("MACHINE_POOL", "gpu-spot")["limits"] == {"cpu": "64"}
    spec = MachinePool.objects.get().spec()
    nodepool = karpenter.node_pool(spec, "default", None)
    requirements = nodepool["spec"]["template"]["spec"]["requirements"]
    assert requirements[2] == {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["us-east-1a"]}
    assert requirements[-1] == {"key": "team", "operator": "Exists"}  # no values for Exists
    assert nodepool["spec"]["limits"] == {"nodes": "3", "cpu": "64"}
    assert nodepool["spec"]["disruption"]["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert nodepool["spec"]["disruption"]["budgets"][1]["duration"] == "8h"
    assert differences(spec, karpenter.observed(nodepool).spec, karpenter.KarpenterProvider.fields) == []


@pytest.mark.parametrize(
    ("body", "field"),
    [({"rosa_topology": "both"}, "rosa_topology"), ({"aws_region": "Mars"}, "aws_region")],
)
def test_backend_topology_and_region_are_checked(db, body, field):
    with pytest.raises(ConfigError) as refused:
        store.apply("BACKEND", "b", {"machine_provider": "rosa", "ocm_cluster_id": "c", **body}, CLI)
    assert refused.value.field == field
    assert not Backend.objects.exists()


def test_exports_carry_the_new_fields_or_say_they_cannot():
    from clusters.machinepools import export
    from clusters.machinepools.spec import MachinePoolSpec

    spec = MachinePoolSpec(
        "gpu", "g5.xlarge", min_replicas=0, max_replicas=6, availability_zones=tuple(ZONES), subnets=(),
        security_groups=(SG,), aws_tags={"team": "ml"},
    )  # fmt: skip
    command = export.rosa(spec, "c1")
    assert "--multi-availability-zone" in command.text and f"--additional-security-group-ids={SG}" in command.text
    assert "--tags=team:ml" in command.text and command.notes == ()
    single = export.rosa(MachinePoolSpec("one", "m5.xlarge", replicas=1, availability_zones=("us-east-1a",),
                                         subnets=(SUBNET,)), "c1")  # fmt: skip
    assert "--availability-zone=us-east-1a" in single.text and f"--subnet={SUBNET}" in single.text
    module = export.terraform(spec)
    assert 'not expressible: security_groups ["sg-0a1b2c3d4e5f60718"]: the module has no variable for it' in (
        module.text
    )
    assert len(module.notes) == 3  # zones, security groups, tags
    karpenter_only = MachinePoolSpec("k", "m5.xlarge", max_replicas=2, limits={"cpu": "8"})
    assert export.rosa(karpenter_only, "c1").notes == ('limits {"cpu": "8"}: Karpenter\'s, not a ROSA machine pool\'s',)


def test_a_label_difference_names_only_the_labels_that_differ_as_key_value():
    from clusters.machinepools.spec import MachinePoolSpec

    portal = MachinePoolSpec("gpu", "p4d.24xlarge", labels={"team": "vision", "tier": "gold", "zone": "a"})
    provider = MachinePoolSpec("gpu", "p4d.24xlarge", labels={"team": "vision", "tier": "silver", "extra": "x"})
    assert differences(portal, provider, ("labels",)) == [
        "labels: provider extra=x, tier=silver, zone unset, portal extra unset, tier=gold, zone=a"
    ]


# -- a backend's settings under its machine pools -----------------------------------------------------------------
# A pool is checked against its backend's provider, topology and region when the pool is saved; a change of the
# backend that one of its pools would break is refused as well, or the pool would go to the provider and fail there.

ROSA_A = {"machine_provider": "rosa", "ocm_cluster_id": "27h3k9q2v8m4n1p6r5s0t7u3w2x9y4z1"}
CLASSIC = {"machine_provider": "rosa", "ocm_cluster_id": "c1", "rosa_topology": "classic", "aws_region": "us-east-1"}

# (backend, its pools {name: changes to the GPU spot pool}, the backend's new settings, field, words of the reason);
# a cap the pools break together is said of the largest
BREAKING = [
    ("rosa-a", {"big": scaling(0, 300)}, {**ROSA_A, "rosa_topology": "classic"}, "rosa_topology",
     "machine pool big would be refused: autoscaling.max_replicas: ROSA Classic allows at most 249 nodes per cluster"),
    ("rosa-a", {"a-small": scaling(0, 100), "b-big": scaling(0, 200)}, {**ROSA_A, "rosa_topology": "classic"},
     "rosa_topology",
     "machine pool b-big would be refused: autoscaling.max_replicas: the cluster's other machine pools may have 100"),
    ("classic", {"zoned": {"availability_zones": ["us-east-1a"]}}, {**CLASSIC, "aws_region": "eu-west-1"},
     "aws_region",
     "machine pool zoned would be refused: availability_zones[0]: is not in the cluster's region eu-west-1"),
    ("classic", {"g5": {"instance_type": "g5.xlarge"}}, {**CLASSIC, "aws_region": "af-south-1"}, "aws_region",
     "machine pool g5 would be refused: instance_type: is not offered in classic's region af-south-1"),
    ("classic", {"multi": {**scaling(0, 6), "availability_zones": ZONES}}, {**CLASSIC, "rosa_topology": "hcp"},
     "rosa_topology",
     "machine pool multi would be refused: availability_zones: a machine pool of ROSA with hosted control planes"),
    ("karp", {"picky": {"requirements": [{"key": "team", "operator": "Exists"}], "max_price": None}}, ROSA_A,
     "machine_provider", "machine pool picky would be refused: requirements: is Karpenter's"),
    ("rosa-a", {"tagged": {"aws_tags": {"team": "ml"}}}, {"machine_provider": "karpenter"}, "machine_provider",
     "machine pool tagged would be refused: aws_tags: on Karpenter this is the EC2NodeClass's (tags)"),
    ("rosa-a", {"capped": {"max_price": "0.4"}}, {"machine_provider": "karpenter"}, "machine_provider",
     "machine pool capped would be refused: max_price: Karpenter takes no spot max price"),
]  # fmt: skip


def breaking(index: int) -> tuple[str, dict, str, str]:
    """Make case `index`'s machine pools; answer the backend, its new document, the field and the words."""
    backend, pools, new, field, words = BREAKING[index]
    for name, changes in pools.items():
        store.apply("MACHINE_POOL", name, body_of(changes, backend), CLI)
    return backend, new, field, words


@pytest.mark.parametrize("index", range(len(BREAKING)), ids=[case[3] + f"-{i}" for i, case in enumerate(BREAKING)])
def test_a_backend_change_its_machine_pools_would_break_is_refused(limits_backends, index):
    backend, new, field, words = breaking(index)
    before, revisions = store.show("BACKEND", backend), Revision.objects.filter(config_type="BACKEND").count()
    with pytest.raises(ConfigError) as refused:
        store.apply("BACKEND", backend, new, CLI)
    assert refused.value.field == field and refused.value.value == new[field], refused.value
    assert words in refused.value.reason and "change or delete the machine pool first" in refused.value.reason
    assert store.show("BACKEND", backend) == before
    assert Revision.objects.filter(config_type="BACKEND").count() == revisions


def test_the_cli_rest_and_admin_refuse_a_breaking_backend_change(limits_backends, cli, admin_api, admin_client,
                                                                  tmp_path):  # fmt: skip
    backend, new, field, words = breaking(0)
    before, revisions = store.show("BACKEND", backend), Revision.objects.filter(config_type="BACKEND").count()
    path = tmp_path / "backend.json"
    path.write_text(json.dumps(new))
    code, out, err = cli("update", "BACKEND", backend, "--file", str(path))
    assert (code, out) == (1, "") and err.startswith(f"error: {field}: ") and err.count("\n") == 1, err
    assert err == (
        "error: rosa_topology: machine pool big would be refused: autoscaling.max_replicas: ROSA Classic allows at "
        "most 249 nodes per cluster (the rosa CLI's limit) (value: 300); change or delete the machine pool first "
        "(value: 'classic')\n"
    )  # as docs/machine-pool-providers.md shows it
    answer = admin_api.put(f"/api/configs/backend/{backend}", {"configs": new}, format="json")
    assert answer.status_code == 400 and answer.json()["field"] == field and words in answer.json()["reason"]
    row = Backend.objects.get(name=backend)
    data = {"description": "", "namespace": "default", "quota_scheduler": "portal", "verify_tls": "on",
            "ocm_url": "", "ocm_token": "", "karpenter_node_class": "default", "aws_region": "", **new}  # fmt: skip
    page = admin_client.post(reverse("admin:clusters_backend_change", args=[row.pk]), data)
    assert page.status_code == 200 and field in page.context["adminform"].form.errors, page
    assert store.show("BACKEND", backend) == before
    assert Revision.objects.filter(config_type="BACKEND").count() == revisions


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [({"rosa_topology": "both"}, "rosa_topology", "must be one of hcp, classic, not “both”"),
     ({"aws_region": "Mars"}, "aws_region", "must be an AWS region such as us-east-1")],
)  # fmt: skip
def test_the_admin_backend_form_sets_topology_and_region_and_refuses_bad_ones(limits_backends, admin_client, changes,
                                                                              field, words):  # fmt: skip
    row = Backend.objects.get(name="classic")
    url = reverse("admin:clusters_backend_change", args=[row.pk])
    page = admin_client.get(url).content.decode()
    assert 'name="rosa_topology"' in page and 'name="aws_region"' in page
    data = {"description": "", "namespace": "default", "quota_scheduler": "portal", "verify_tls": "on",
            "ocm_url": "", "ocm_token": "", "karpenter_node_class": "default", **CLASSIC}  # fmt: skip
    before = store.show("BACKEND", "classic")
    refused = admin_client.post(url, {**data, **changes})
    assert refused.status_code == 200 and words in str(refused.context["adminform"].form.errors[field])
    assert store.show("BACKEND", "classic") == before
    assert admin_client.post(url, {**data, "aws_region": "eu-west-1"}).status_code == 302
    assert Backend.objects.get(name="classic").aws_region == "eu-west-1"


def test_a_backend_change_its_machine_pools_allow_is_taken(limits_backends):
    for name, changes in {"small": scaling(0, 100), "zoned": {"availability_zones": ["us-east-1a"]}}.items():
        store.apply("MACHINE_POOL", name, body_of(changes, "rosa-a"), CLI)
    store.apply("BACKEND", "rosa-a", {**ROSA_A, "rosa_topology": "classic", "aws_region": "us-east-1"}, CLI)
    store.apply("BACKEND", "rosa-a", {"description": "export only now"}, CLI)  # no provider: nothing to refuse
    assert Backend.objects.get(name="rosa-a").machine_provider == ""
