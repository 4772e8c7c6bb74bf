"""The translation of a quota tree into KAI-Scheduler and Kueue objects (clusters.schedulers): the objects,
their validity against the published CRD schemas, pod routing, and clear refusals."""

from __future__ import annotations

import copy

import pytest

from clusters.schedulers import (
    Department,
    NodePool,
    Project,
    Quota,
    QuotaTree,
    SchedulerObjectInvalid,
    TranslationError,
    kai,
    kueue,
    pod_routing,
    resource_of,
    validate,
)
from clusters.schedulers.crds import crds
from clusters.schedulers.tree import object_name

GI = 2**30
DEFAULT = NodePool("sim-default", default=True)
A100 = NodePool("a100", node_labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, capacity={"gpu": 16})
H100 = NodePool("h100", node_names=("h100-node-0", "h100-node-1"), over_quota=False)


def tree() -> QuotaTree:
    vision = Project(
        "vision",
        priority=2,
        quotas={
            "a100": {
                "gpu": Quota(8, 12, 2),
                "cpu": Quota(64_000, None, 1),
                "memory": Quota(512 * GI, None, 1),
            },
            "h100": {"gpu": Quota(4, None, 1)},
        },
    )
    speech = Project("speech", quotas={"a100": {"gpu": Quota(4, None, 1), "cpu": Quota(2_500)}})
    research = Department("research", quotas={"a100": {"gpu": Quota(12, None, 3)}}, projects=(vision, speech))
    ops = Department("ml-ops", projects=(Project("Inference_Team"),))
    return QuotaTree("sim", "wf-jobs", (DEFAULT, A100, H100), (research, ops))


def by_name(objects: list[dict]) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects}


# ------------------------------------------------------------------------------------------ KAI


def test_kai_queues_are_a_department_project_tree_per_node_pool():
    queues = by_name(kai.queues(tree()))
    assert sorted(queues) == sorted(
        [
            *("research", "vision", "speech", "ml-ops", object_name("Inference_Team")),
            *("a100-research", "a100-vision", "a100-speech", "a100-ml-ops", kai.queue_name("Inference_Team", A100)),
            *("h100-research", "h100-vision", "h100-speech", "h100-ml-ops", kai.queue_name("Inference_Team", H100)),
        ]
    )
    vision = queues["a100-vision"]
    assert vision["apiVersion"] == "scheduling.run.ai/v2" and vision["kind"] == "Queue"
    assert vision["metadata"]["labels"] == {
        "app.kubernetes.io/managed-by": "pool-portal",
        "pool-portal/backend": "sim",
        "kai.scheduler/node-pool": "a100",
    }
    assert vision["spec"] == {
        "displayName": "vision",
        "parentQueue": "a100-research",
        "priority": 102,
        "resources": {
            "gpu": {"quota": 8, "limit": 12, "overQuotaWeight": 2},
            "cpu": {"quota": 64_000, "limit": -1, "overQuotaWeight": 1},
            "memory": {"quota": 549_755.813888, "limit": -1, "overQuotaWeight": 1},  # megabytes (10^6 bytes)
        },
    }
    department = queues["a100-research"]["spec"]
    assert "parentQueue" not in department and "priority" not in department
    assert department["resources"]["gpu"] == {"quota": 12, "limit": -1, "overQuotaWeight": 3}


def test_kai_default_node_pool_is_the_default_shard_and_over_quota_off_means_no_borrowing():
    queues = by_name(kai.queues(tree()))
    assert "kai.scheduler/node-pool" not in queues["vision"]["metadata"]["labels"]
    assert queues["vision"]["spec"]["parentQueue"] == "research"
    assert queues["vision"]["spec"]["resources"]["gpu"] == {"quota": 0, "limit": -1, "overQuotaWeight": 1}
    h100 = queues["h100-vision"]["spec"]["resources"]
    assert h100["gpu"] == {"quota": 4, "limit": 4, "overQuotaWeight": 0}
    assert h100["cpu"] == {"quota": 0, "limit": 0, "overQuotaWeight": 0}


def test_kai_queue_names_that_collide_are_refused_naming_both():
    clash = QuotaTree("sim", "ns", (DEFAULT,), (Department("vision", projects=(Project("vision"),)),))
    with pytest.raises(TranslationError) as caught:
        kai.queues(clash)
    assert "project vision in node pool sim-default and department vision" in caught.value.reason
    assert caught.value.value == "vision"


# ------------------------------------------------------------------------------------------ Kueue


def test_kueue_flavors_follow_the_node_pools():
    flavors = by_name(kueue.resource_flavors(tree()))
    assert flavors["sim-default"]["spec"] == {}
    assert flavors["a100"]["spec"] == {"nodeLabels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}}
    assert flavors["h100"]["spec"] == {"nodeLabels": {"pool-portal/node-pool": "h100"}}


def test_kueue_cluster_queue_per_project_in_its_departments_cohort():
    queues = by_name(kueue.cluster_queues(tree()))
    vision = queues["vision"]["spec"]
    assert vision["cohort"] == "research"
    assert vision["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "wf-jobs"}}
    assert vision["preemption"]["reclaimWithinCohort"] == "Any"
    [group] = vision["resourceGroups"]
    assert group["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    flavors = {f["name"]: f["resources"] for f in group["flavors"]}
    assert list(flavors) == ["sim-default", "a100", "h100"]
    assert flavors["a100"] == [
        {"name": "cpu", "nominalQuota": 64},
        {"name": "memory", "nominalQuota": "512Gi"},
        {"name": "nvidia.com/gpu", "nominalQuota": 8, "borrowingLimit": 4},
    ]
    assert flavors["h100"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 4, "borrowingLimit": 0}  # over-quota off
    assert "fairSharing" not in vision  # weights differ per node pool and resource: no one number says them
    speech = queues["speech"]["spec"]
    assert speech["fairSharing"] == {"weight": 1}
    assert {f["name"]: f["resources"][0] for f in speech["resourceGroups"][0]["flavors"]}["a100"] == {
        "name": "cpu",
        "nominalQuota": "2500m",
    }
    assert queues[object_name("Inference_Team")]["spec"]["cohort"] == "ml-ops"


def test_kueue_local_queue_per_project_in_the_backend_namespace():
    queues = kueue.local_queues(tree())
    assert [(q["metadata"]["namespace"], q["metadata"]["name"], q["spec"]["clusterQueue"]) for q in queues] == [
        ("wf-jobs", "vision", "vision"),
        ("wf-jobs", "speech", "speech"),
        ("wf-jobs", object_name("Inference_Team"), object_name("Inference_Team")),
    ]
    assert [o["kind"] for o in kueue.objects(tree())] == ["ResourceFlavor"] * 3 + ["Cohort"] * 3 + [
        "ClusterQueue"
    ] * 3 + ["LocalQueue"] * 3


def test_kueue_cohorts_a_root_per_backend_and_a_department_under_it():
    cohorts = by_name(kueue.cohorts(tree()))
    assert list(cohorts) == ["sim-root", "research", "ml-ops"]  # the root first: the order to apply them in
    root, research = cohorts["sim-root"]["spec"], cohorts["research"]["spec"]
    assert "parentName" not in root and research["parentName"] == cohorts["ml-ops"]["spec"]["parentName"] == "sim-root"
    gpu = {f["name"]: f["resources"][2] for f in root["resourceGroups"][0]["flavors"]}
    assert gpu["a100"] == {"name": "nvidia.com/gpu", "nominalQuota": 4}  # capacity 16 - research's 12
    research_gpu = {f["name"]: f["resources"][2] for f in research["resourceGroups"][0]["flavors"]}
    assert research_gpu["a100"] == {"name": "nvidia.com/gpu", "nominalQuota": 0}  # 12 - (8 + 4): all split
    assert research_gpu["h100"] == {"name": "nvidia.com/gpu", "nominalQuota": 0, "borrowingLimit": 0}
    assert "fairSharing" not in research  # weight 3 for A100 GPUs, 1 elsewhere: no one number says it
    assert cohorts["ml-ops"]["spec"]["fairSharing"] == {"weight": 1}


def test_kueue_department_cohorts_carry_unsplit_deserved_limit_and_never_lend():
    vision = Project("vision", quotas={"a100": {"gpu": Quota(8, None, 1, lend=False)}})
    research = Department("research", quotas={"a100": {"gpu": Quota(12, 16, 1, lend=False)}}, projects=(vision,))
    objects = kueue.objects(QuotaTree("sim", "wf-jobs", (DEFAULT, A100), (research,)))
    for obj in objects:
        validate(obj)
    cohort = by_name(o for o in objects if o["kind"] == "Cohort")["research"]["spec"]
    flavors = {f["name"]: f["resources"][2] for f in cohort["resourceGroups"][0]["flavors"]}
    assert flavors["a100"] == {"name": "nvidia.com/gpu", "nominalQuota": 4, "borrowingLimit": 4, "lendingLimit": 0}
    queue = by_name(o for o in objects if o["kind"] == "ClusterQueue")["vision"]["spec"]
    flavors = {f["name"]: f["resources"][2] for f in queue["resourceGroups"][0]["flavors"]}
    assert flavors["a100"] == {"name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": 0}
    assert flavors["sim-default"] == {"name": "nvidia.com/gpu", "nominalQuota": 0}  # lends where it says nothing


def test_a_department_named_like_the_root_cohort_is_refused_naming_both():
    clash = QuotaTree("sim", "ns", (DEFAULT,), (Department("sim-root", projects=(Project("vision"),)),))
    with pytest.raises(TranslationError) as caught:
        kueue.objects(clash)
    assert "department sim-root and backend sim's root cohort" in caught.value.reason


def test_names_that_are_not_kubernetes_names_are_made_so_without_collisions():
    assert object_name("vision") == "vision"
    made = object_name("Inference_Team")
    assert made.startswith("inference-team-") and len(made) == len("inference-team-") + 8
    assert object_name("inference.team") != object_name("inference_team")
    assert len(object_name("x" * 100)) <= 63


# ------------------------------------------------------------------------------------------ validation


def test_every_generated_object_matches_the_published_schemas():
    generated = [*kai.queues(tree()), *kueue.objects(tree())]
    for obj in generated:
        validate(obj)
    assert {resource_of(o).plural for o in generated} == {
        "queues",
        "resourceflavors",
        "cohorts",
        "clusterqueues",
        "localqueues",
    }
    assert resource_of(kueue.local_queues(tree())[0]).namespaced
    # each schema file says where it was read
    for crd in crds().values():
        assert crd.source["repository"] in ("NVIDIA/KAI-Scheduler", "kubernetes-sigs/kueue")
        assert len(crd.source["commit"]) == 40 and crd.source["path"].endswith(".yaml")


@pytest.mark.parametrize(
    ("mutate", "field", "reason"),
    [
        (lambda q: q["spec"]["resources"]["gpu"].update(quota="eight"), "spec.resources.gpu.quota", "not of type"),
        (lambda q: q["spec"].update(priority=1.5), "spec.priority", "not of type 'integer'"),
        (lambda q: q["spec"]["resources"]["gpu"].update(deserved=8), "spec.resources.gpu", "unknown field(s) deserved"),
        (lambda q: q["metadata"].update(name="Vision_Team"), "metadata.name", "DNS-1123"),
        (lambda q: q["metadata"].update(namespace="wf-jobs"), "metadata.namespace", "must not have"),
    ],
)
def test_an_invalid_kai_queue_is_refused_with_a_clear_message(mutate, field, reason):
    queue = copy.deepcopy(kai.queues(tree())[1])
    mutate(queue)
    with pytest.raises(SchedulerObjectInvalid) as caught:
        validate(queue)
    assert caught.value.field == field
    assert reason in caught.value.reason and "Queue" in caught.value.reason


def test_an_invalid_kueue_object_is_refused_with_a_clear_message():
    cluster_queue = copy.deepcopy(kueue.cluster_queues(tree())[0])
    cluster_queue["spec"]["queueingStrategy"] = "Fastest"
    with pytest.raises(SchedulerObjectInvalid) as caught:
        validate(cluster_queue)
    assert caught.value.field == "spec.queueingStrategy" and caught.value.value == "Fastest"
    assert "'Fastest' is not one of ['StrictFIFO', 'BestEffortFIFO']" in caught.value.reason
    flavorless = copy.deepcopy(kueue.cluster_queues(tree())[0])
    del flavorless["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"]
    with pytest.raises(SchedulerObjectInvalid, match="'nominalQuota' is a required property"):
        validate(flavorless)
    local = copy.deepcopy(kueue.local_queues(tree())[0])
    del local["metadata"]["namespace"]
    with pytest.raises(SchedulerObjectInvalid, match="LocalQueue vision: needs a metadata.namespace"):
        validate(local)
    with pytest.raises(SchedulerObjectInvalid) as unknown:
        validate({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"}})
    assert unknown.value.field == "kind" and "known: kueue.x-k8s.io/v1beta1 ClusterQueue" in unknown.value.reason


# ------------------------------------------------------------------------------------------ pod routing


def test_pod_routing_per_scheduler():
    assert pod_routing("portal", "vision") == ("", {})
    assert pod_routing("portal", None, scheduler_name="custom") == ("custom", {})
    assert pod_routing("kai", "vision", DEFAULT) == ("kai-scheduler", {"kai.scheduler/queue": "vision"})
    assert pod_routing("kai", "vision", A100) == (
        "kai-scheduler",
        {"kai.scheduler/queue": "a100-vision", "kai.scheduler/node-pool": "a100"},
    )
    assert pod_routing("kai", "vision", scheduler_name="kai-shard-a")[0] == "kai-shard-a"
    assert pod_routing("kueue", "Inference_Team") == ("", {"kueue.x-k8s.io/queue-name": object_name("Inference_Team")})
    # the labels name queues that the translation writes
    queues = by_name(kai.queues(tree()))
    assert pod_routing("kai", "speech", A100)[1]["kai.scheduler/queue"] in queues


def test_pod_routing_refuses_what_it_cannot_route():
    with pytest.raises(TranslationError) as unknown:
        pod_routing("volcano", "vision")
    assert unknown.value.field == "quota_scheduler" and "portal, kai, kueue" in unknown.value.reason
    with pytest.raises(TranslationError, match="must be charged to a project") as missing:
        pod_routing("kai", None)
    assert missing.value.field == "project"
