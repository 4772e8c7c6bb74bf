"""The per-cluster manifests (deploy/workload-cluster/clusters/*) grant exactly what the portal's code uses
on a workload cluster (clusters/kube/, quotas/services/delegation.py, quotas/services/node_labels.py,
clusters/machinepools/providers/karpenter.py), nothing more, to the portal's
account only."""

from __future__ import annotations

import pytest
import yaml

from tests.deploy.manifests import DEPLOY, of_kind, render, schema_problems

WORKLOAD = DEPLOY / "workload-cluster"
CLUSTERS = sorted(p.name for p in (WORKLOAD / "clusters").iterdir() if (p / "kustomization.yaml").exists())
CRUD = ("create", "get", "list", "update", "delete")  # clusters.kube.custom_objects: apply, get, list_objects, delete

# (scope, API group, resource, verb); scope "cluster" (ClusterRole) or "namespace" (Role in the workload one).
ALWAYS = {
    *(("cluster", "", resource, verb) for resource in ("nodes", "pods") for verb in ("list", "watch")),
    *(("namespace", "", "pods", verb) for verb in ("create", "get", "delete")),
    ("namespace", "", "namespaces", "get"),  # the connection test reads the workload namespace
    ("cluster", "", "nodes", "patch"),  # the node-pool label confining pods (quotas/services/node_labels.py)
}
BY_COMPONENT = {
    "kai": {
        *(("cluster", "scheduling.run.ai", "queues", verb) for verb in CRUD),
    },
    "kueue": {
        *(
            ("cluster", "kueue.x-k8s.io", kind, verb)
            for kind in ("resourceflavors", "cohorts", "clusterqueues")
            for verb in CRUD
        ),
        ("cluster", "kueue.x-k8s.io", "localqueues", "list"),
        *(("namespace", "kueue.x-k8s.io", "localqueues", verb) for verb in ("create", "get", "update", "delete")),
    },
    "karpenter": {*(("cluster", "karpenter.sh", "nodepools", verb) for verb in CRUD)},  # machine pools
}


def components_of(cluster: str) -> list[str]:
    kustomization = yaml.safe_load((WORKLOAD / "clusters" / cluster / "kustomization.yaml").read_text())
    return [path.rstrip("/").rsplit("/", 1)[-1] for path in kustomization.get("components") or ()]


def grants(objects) -> set[tuple[str, str, str, str]]:
    """What the bound roles allow, as (scope, group, resource, verb); a role nobody binds allows nothing."""
    roles = {(obj["kind"], obj["metadata"]["name"]): obj for obj in objects if obj["kind"] in ("Role", "ClusterRole")}
    granted = set()
    for binding in [*of_kind(objects, "RoleBinding"), *of_kind(objects, "ClusterRoleBinding")]:
        role = roles[binding["roleRef"]["kind"], binding["roleRef"]["name"]]
        scope = "namespace" if binding["kind"] == "RoleBinding" else "cluster"
        for rule in role["rules"]:
            assert "resourceNames" not in rule and "nonResourceURLs" not in rule, rule
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    granted |= {(scope, group, resource, verb) for verb in rule["verbs"]}
    return granted


def test_there_is_an_example_per_kind_of_cluster():
    # A site adds its own clusters beside these (docs/deploy.md); each is checked like them.
    examples = {cluster: components_of(cluster) for cluster in CLUSTERS if cluster.startswith("example-")}
    assert examples == {
        "example-kai": ["kai"],
        "example-karpenter": ["karpenter"],
        "example-kueue": ["kueue"],
        "example-plain": [],
    }


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_grants_exactly_what_the_code_uses(cluster):
    objects = render(WORKLOAD / "clusters" / cluster)
    expected = set(ALWAYS)
    for component in components_of(cluster):
        expected |= BY_COMPONENT[component]
    assert sorted(grants(objects)) == sorted(expected)


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_only_the_portal_account_in_the_workload_namespace_is_bound(cluster):
    objects = render(WORKLOAD / "clusters" / cluster)
    (namespace,) = [obj["metadata"]["name"] for obj in of_kind(objects, "Namespace")]
    assert schema_problems(objects) == []
    for binding in [*of_kind(objects, "RoleBinding"), *of_kind(objects, "ClusterRoleBinding")]:
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "pool-portal", "namespace": namespace}]
    for obj in objects:
        if obj["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding"):
            assert obj["metadata"]["namespace"] == namespace, obj["metadata"]
    (token,) = of_kind(objects, "Secret")
    assert token["type"] == "kubernetes.io/service-account-token" and "data" not in token


def test_a_wider_rule_is_caught():
    objects = list(render(WORKLOAD / "clusters" / "example-plain"))
    (role,) = of_kind(objects, "Role")
    widened = {**role, "rules": [*role["rules"], {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}
    objects[objects.index(role)] = widened
    assert grants(objects) - ALWAYS == {("namespace", "", "secrets", "get")}
