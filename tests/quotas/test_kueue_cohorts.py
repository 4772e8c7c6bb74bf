"""Seed 003 delegated to Kueue, on the simulated cluster serving Kueue's CRDs: the cohort tree the portal writes
(a root Cohort for the backend, a Cohort per department, each project's ClusterQueue in its department's),
ML-Ops' ClusterQueue able to borrow R&D's idle A100-80GB GPUs through the cohorts, "never lend" giving
`lendingLimit: 0` (on a project's ClusterQueue or a department's Cohort) so that nothing is lent, and the
Cohorts kept in step (a department deleted, the backend back to the portal).

What the Kueue objects say is read with Kueue's own arithmetic for hierarchical cohorts (restated below from
kubernetes-sigs/kueue's cache: a node's subtree quota is its nominal quota plus what its children may lend, a
node's guaranteed quota is what its lendingLimit keeps from its parent, and what a ClusterQueue can reach is
its guaranteed quota plus what its parent can reach, within its borrowingLimit).

    node pool   capacity   deserved (GPUs)
    v100        80         mlops 40, rnd 40 (each of their eight projects 10)
    a100-40gb   20         mlops 20 (infer 8, serve 8, monitor 4)
    a100-80gb   20         rnd 20 (vision 8, nlp 8, speech 4)
"""

from __future__ import annotations

import pytest

from clusters.models import Backend
from configs import store
from quotas.services import delegation
from quotas.services.quotas import set_quota
from quotas.services.scheduler_status import scheduler_status
from tests.factories import DepartmentFactory
from tests.quotas import gpu_cluster as gc
from tests.quotas.test_seed_scenario import TEAMS

COHORTS = "cohorts.kueue.x-k8s.io"
QUEUES = "clusterqueues.kueue.x-k8s.io"
GPU = "nvidia.com/gpu"
MANAGED = "app.kubernetes.io/managed-by=pool-portal,pool-portal/backend=sim"


@pytest.fixture
def seed(db):
    with gc.cluster(v100=20, a100_40=5, a100_80=5) as server:
        server.emulator.serve_schedulers("kueue")
        gc.configure(server, ["v100", "a100-40", "a100-80"])
        gc.teams(TEAMS)
        gc.set_quotas(
            "v100", "v100", {"mlops": 40, "rnd": 40}, {p: 10 for projects in TEAMS.values() for p in projects}
        )
        gc.set_quotas("a100-40gb", "a100-40", {"mlops": 20}, {"infer": 8, "serve": 8, "monitor": 4})
        gc.set_quotas("a100-80gb", "a100-80", {"rnd": 20}, {"vision": 8, "nlp": 8, "speech": 4})
        backend_document = {"description": "simulated", "namespace": gc.NAMESPACE, "api_url": server.url}
        store.apply("BACKEND", "sim", {**backend_document, "quota_scheduler": "kueue"}, gc.CLI)
        yield server.emulator


def sync():
    return delegation.sync_scheduler_objects(Backend.objects.get(name="sim"))


def listed(cluster, plural: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in cluster.list(plural, None, label_selector=MANAGED)}


# ------------------------------------------------------------------ Kueue's arithmetic, over the objects


class KueueTree:
    """One (flavor, resource) of the cohort tree the cluster holds, as Kueue's cache computes it."""

    def __init__(self, cluster, flavor: str, resource: str = GPU) -> None:
        self.parent: dict[str, str | None] = {}
        self.quota: dict[str, dict] = {}
        for kind, plural, parent_field in (("cohort", COHORTS, "parentName"), ("queue", QUEUES, "cohort")):
            for name, obj in listed(cluster, plural).items():
                key = (kind, name)
                spec = obj["spec"]
                self.parent[key] = ("cohort", spec[parent_field]) if spec.get(parent_field) else None
                flavors = [f for group in spec.get("resourceGroups", []) for f in group["flavors"]]
                entries = [r for f in flavors if f["name"] == flavor for r in f["resources"] if r["name"] == resource]
                self.quota[key] = entries[0] if entries else {"nominalQuota": 0}

    def children(self, key):
        return [child for child, parent in self.parent.items() if parent == key]

    def subtree(self, key) -> int:
        own = int(self.quota[key]["nominalQuota"])
        return own + sum(self.subtree(child) - self.guaranteed(child) for child in self.children(key))

    def guaranteed(self, key) -> int:
        lending = self.quota[key].get("lendingLimit")
        return 0 if lending is None else max(0, self.subtree(key) - int(lending))

    def potential(self, key) -> int:
        """The most a ClusterQueue (or Cohort) can use of this flavor and resource when nothing is in use."""
        parent = self.parent[key]
        if parent is None:
            return self.subtree(key)
        from_parent = self.potential(parent)
        borrowing = self.quota[key].get("borrowingLimit")
        if borrowing is not None:
            from_parent = min(from_parent, self.subtree(key) - self.guaranteed(key) + int(borrowing))
        return self.guaranteed(key) + from_parent

    def reach(self, project: str) -> int:
        return self.potential(("queue", project))


# ------------------------------------------------------------------------------------------------ tests


def test_the_cohort_tree_is_written_for_the_seeds_departments(seed):
    result = sync()
    assert {"Cohort sim-root", "Cohort mlops", "Cohort rnd"} <= set(result.created)
    assert result.created.index("Cohort sim-root") < result.created.index("Cohort rnd")  # the parent first
    cohorts = listed(seed, COHORTS)
    assert sorted(cohorts) == ["mlops", "rnd", "sim-root"]
    assert "parentName" not in cohorts["sim-root"]["spec"]
    assert {cohorts[d]["spec"]["parentName"] for d in ("mlops", "rnd")} == {"sim-root"}
    queues = listed(seed, QUEUES)
    assert {name: q["spec"]["cohort"] for name, q in queues.items()} == {
        project: department for department, projects in TEAMS.items() for project in projects
    }
    # every department split all its deserved among its projects, and no node pool has unguaranteed GPUs
    for flavor in ("v100", "a100-40gb", "a100-80gb"):
        tree = KueueTree(seed, flavor)
        assert tree.subtree(("cohort", "sim-root")) == {"v100": 80, "a100-40gb": 20, "a100-80gb": 20}[flavor]


def test_ml_ops_borrows_rnds_idle_a100_80gb_through_the_cohorts(seed):
    sync()
    a100_80 = KueueTree(seed, "a100-80gb")
    assert a100_80.quota[("queue", "infer")] == {"name": GPU, "nominalQuota": 0}  # no guarantee, no cap
    assert a100_80.reach("infer") == 20  # R&D's idle 20, lent from its projects, through rnd and the root
    assert a100_80.reach("vision") == 20
    # Kueue admits it as borrowed: the portal reads that back as ML-Ops borrowing in a100-80gb
    usage = [{"name": GPU, "total": "8", "borrowed": "8"}]
    seed.set_status(QUEUES, "infer", {"flavorsUsage": [{"name": "a100-80gb", "resources": usage}]})
    status = scheduler_status(Backend.objects.get(name="sim"))
    infer = next(u for u in status.usage if (u.node_pool, u.project) == ("a100-80gb", "infer"))
    assert infer.borrowed["gpu"] == 8 and status.allocated("a100-80gb", "infer")["gpu"] == 8


def test_a_project_that_never_lends_keeps_its_gpus_from_everyone(seed):
    set_quota(None, "a100-80gb", "project", "nlp", "gpu", lend=False)
    sync()
    nlp = listed(seed, QUEUES)["nlp"]["spec"]["resourceGroups"][0]["flavors"]
    a100_80 = next(f for f in nlp if f["name"] == "a100-80gb")["resources"]
    assert {"name": GPU, "nominalQuota": 8, "lendingLimit": 0} in a100_80
    tree = KueueTree(seed, "a100-80gb")
    assert tree.reach("infer") == 12  # vision's 8 and speech's 4 are still lent; nlp's 8 are not
    assert tree.reach("vision") == 12 and tree.reach("nlp") == 20  # nlp still borrows its siblings' idle GPUs
    set_quota(None, "a100-80gb", "project", "nlp", "gpu", lend=True)
    sync()
    assert KueueTree(seed, "a100-80gb").reach("infer") == 20  # replaced in place: the limit is gone


def test_a_department_that_never_lends_lends_only_to_its_own_projects(seed):
    set_quota(None, "a100-80gb", "department", "rnd", "gpu", lend=False)
    sync()
    rnd = listed(seed, COHORTS)["rnd"]["spec"]["resourceGroups"][0]["flavors"]
    assert {"name": GPU, "nominalQuota": 0, "lendingLimit": 0} in next(
        f["resources"] for f in rnd if f["name"] == "a100-80gb"
    )
    tree = KueueTree(seed, "a100-80gb")
    assert tree.reach("infer") == 0 and tree.reach("serve") == 0
    assert tree.reach("vision") == 20 and tree.reach("speech") == 20  # inside R&D, idle quota is still shared
    assert KueueTree(seed, "v100").reach("infer") == 80  # only a100-80gb never lends


def test_cohorts_follow_the_departments_and_go_with_the_scheduler(seed):
    sync()
    extra = DepartmentFactory(name="finance")
    assert "Cohort finance" in sync().created
    extra.delete()
    assert sync().deleted == ["Cohort finance"]
    api_url = Backend.objects.get(name="sim").api_url
    backend_document = {"description": "simulated", "namespace": gc.NAMESPACE, "api_url": api_url}
    store.apply("BACKEND", "sim", {**backend_document, "quota_scheduler": "portal"}, gc.CLI)
    deleted = sync().deleted
    assert deleted.index("Cohort rnd") < deleted.index("Cohort sim-root")  # children before their parent
    assert listed(seed, COHORTS) == {} and listed(seed, QUEUES) == {}
