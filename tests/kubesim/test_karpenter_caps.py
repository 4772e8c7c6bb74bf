"""The simulated Karpenter protects the simulated cluster as the real API server and cloud would (issue #31
point 3): a NodePool whose `spec.limits` or `spec.weight` its CRD's schema refuses is a 422 over HTTP and is
not stored, and the nodes Karpenter makes count against the cluster's node cap (OCM's
`ocm_max_nodes_per_cluster`), so a NodePool without limits cannot have kubesim make nodes without end."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from .conftest import kube_api_client, wait_until
from .test_machine_pools import GPU_TAINTS, MACHINEPOOL, cloud, gpu_pod, phase, pool_nodes, v1  # noqa: F401

NODEPOOLS = ("karpenter.sh", "v1", "nodepools")


def nodepool(name: str, **spec) -> dict:
    template = {
        "metadata": {"labels": {MACHINEPOOL: name}},
        "spec": {
            "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["g4dn.xlarge"]}],
            "taints": GPU_TAINTS,
        },
    }
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {**spec, "template": template},
    }


@pytest.fixture
def custom(cloud):  # noqa: F811  (the fixture imported above)
    with kube_api_client(cloud.url) as api:
        yield client.CustomObjectsApi(api)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"limits": {"nodes": "lots"}},
            'spec.limits.nodes: Invalid value: "lots": spec.limits.nodes in body should match',
        ),
        ({"limits": {"cpu": 1.5}}, 'spec.limits.cpu: Invalid value: "1.5": spec.limits.cpu in body should match'),
        ({"limits": ["nodes"]}, 'spec.limits: Invalid value: "list": spec.limits in body must be of type object'),
        ({"weight": 101}, "spec.weight: Invalid value: 101: spec.weight in body should be less than or equal to 100"),
        ({"weight": 0}, "spec.weight: Invalid value: 0: spec.weight in body should be greater than or equal to 1"),
        ({"weight": "9"}, 'spec.weight: Invalid value: "9": spec.weight in body must be of type integer'),
        # issue #33: requirements, disruption and a static NodePool's limits, as the CRD refuses them
        ({"replicas": 2, "limits": {"cpu": "8"}}, "spec: Invalid value: \"object\": only 'limits.nodes' is supported"),
        (
            {"disruption": {"consolidationPolicy": "Always"}},
            'spec.disruption.consolidationPolicy: Unsupported value: "Always": supported values: "WhenEmpty"',
        ),
        (
            {"disruption": {"consolidateAfter": "5d"}},
            'spec.disruption.consolidateAfter: Invalid value: "5d": spec.disruption.consolidateAfter in body',
        ),
        (
            {"disruption": {"budgets": [{"nodes": "150%"}]}},
            'spec.disruption.budgets[0].nodes: Invalid value: "150%": spec.disruption.budgets[0].nodes in body should',
        ),
        (
            {"disruption": {"budgets": [{"nodes": "1", "schedule": "@daily"}]}},
            "spec.disruption.budgets: Invalid value: \"array\": 'schedule' must be set with 'duration'",
        ),
        (
            {"disruption": {"budgets": [{"nodes": "1", "reasons": ["Bored"]}]}},
            'spec.disruption.budgets[0].reasons: Unsupported value: "Bored"',
        ),
    ],
)
def test_a_nodepool_its_crd_refuses_is_a_422_and_not_stored(custom, spec, message):
    with pytest.raises(ApiException) as refused:
        custom.create_cluster_custom_object(*NODEPOOLS, nodepool("gpu", **spec))
    assert refused.value.status == 422
    body = json.loads(refused.value.body)
    assert body["reason"] == "Invalid" and body["message"].startswith(
        f'NodePool.karpenter.sh "gpu" is invalid: {message}'
    )
    assert custom.list_cluster_custom_object(*NODEPOOLS)["items"] == []


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        ({"key": "team", "operator": "Like", "values": ["a"]},
         'spec.template.spec.requirements[1].operator: Unsupported value: "Like"'),
        ({"key": "team", "operator": "In", "values": []},
         "requirements with operator 'In' must have a value defined"),
        ({"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["x"]},
         "must have a single positive integer value"),
    ],
)  # fmt: skip
def test_a_requirement_its_crd_refuses_is_a_422_and_not_stored(custom, requirement, message):
    body = nodepool("gpu")
    body["spec"]["template"]["spec"]["requirements"].append(requirement)
    with pytest.raises(ApiException) as refused:
        custom.create_cluster_custom_object(*NODEPOOLS, body)
    assert refused.value.status == 422 and message in json.loads(refused.value.body)["message"]
    assert custom.list_cluster_custom_object(*NODEPOOLS)["items"] == []


def test_a_change_its_crd_refuses_is_a_422_and_the_nodepool_stays(custom):
    custom.create_cluster_custom_object(*NODEPOOLS, nodepool("gpu", limits={"nodes": "3"}, weight=10))
    with pytest.raises(ApiException) as refused:
        custom.patch_cluster_custom_object(*NODEPOOLS, "gpu", {"spec": {"limits": {"nodes": "1e30x"}}})
    assert refused.value.status == 422
    assert custom.get_cluster_custom_object(*NODEPOOLS, "gpu")["spec"]["limits"] == {"nodes": "3"}


def test_the_nodes_karpenter_makes_stay_within_the_cluster_cap(cloud, custom, v1):  # noqa: F811
    cloud.call(lambda: setattr(cloud.emulator, "ocm_max_nodes_per_cluster", 2))
    custom.create_cluster_custom_object(*NODEPOOLS, nodepool("gpu"))  # no limits: Karpenter's own bound is none
    for i in range(3):  # one T4 per g4dn.xlarge: three pods want three nodes
        gpu_pod(v1, f"train-{i}", {"kubesim/never-finish": "true"}, pool="gpu")

    wait_until(lambda: sum(phase(v1, f"train-{i}") == "Running" for i in range(3)) == 2, what="2 running")
    assert len(pool_nodes(v1, "gpu", "karpenter.sh/nodepool")) == 2
    assert [phase(v1, f"train-{i}") for i in range(3)].count("Pending") == 1
    cloud.call(lambda: setattr(cloud.emulator, "ocm_max_nodes_per_cluster", 3))  # the cap raised: the third comes
    wait_until(lambda: all(phase(v1, f"train-{i}") == "Running" for i in range(3)), what="3 running")
