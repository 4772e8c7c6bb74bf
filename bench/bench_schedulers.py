"""Scheduler translation benchmarks (`make bench BENCH=schedulers`): a backend's quota tree of 50 projects in
5 departments over 10 node pools (the Default and 9 label pools), every (team, node pool, resource) with a
quota, written as KAI Queues and as Kueue objects, and checked against the published CRD schemas.

No target in the issue: the translation runs on every quota change, so it only has to be far below a second.
"""

from __future__ import annotations

from bench.harness import Row, measure
from clusters.schedulers import Department, NodePool, Project, Quota, QuotaTree, kai, kueue, validate

DEPARTMENTS, PROJECTS_PER_DEPARTMENT, NODE_POOLS = 5, 10, 10


def scenario() -> QuotaTree:
    pools = [NodePool("cluster-default", default=True)]
    pools += [NodePool(f"pool-{i}", node_labels={"example.com/node-pool": f"pool-{i}"}) for i in range(1, NODE_POOLS)]

    def quotas(scale: int) -> dict:
        return {
            pool.name: {
                "gpu": Quota(scale, scale * 2, 1 + scale % 3),
                "cpu": Quota(scale * 8_000, None, 1),
                "memory": Quota(scale * 64 * 2**30, None, 1),
            }
            for pool in pools
        }

    departments = tuple(
        Department(
            f"department-{d}",
            quotas=quotas(PROJECTS_PER_DEPARTMENT * 4),
            projects=tuple(
                Project(f"project-{d}-{p}", quotas=quotas(p % 4 + 1), priority=p % 3)
                for p in range(PROJECTS_PER_DEPARTMENT)
            ),
        )
        for d in range(DEPARTMENTS)
    )
    return QuotaTree("bench-cluster", "osmo-workflows", tuple(pools), departments)


def run() -> list[Row]:
    tree = scenario()
    queues, objects = kai.queues(tree), kueue.objects(tree)
    assert len(queues) == NODE_POOLS * DEPARTMENTS * (PROJECTS_PER_DEPARTMENT + 1)  # 550
    assert len(objects) == NODE_POOLS + 1 + DEPARTMENTS + 2 * DEPARTMENTS * PROJECTS_PER_DEPARTMENT  # 116 (6 Cohorts)
    shape = f"{DEPARTMENTS * PROJECTS_PER_DEPARTMENT} projects × {NODE_POOLS} node pools"
    return [
        measure("KAI queues", lambda: kai.queues(tree), runs=50, note=f"{shape}: {len(queues)} Queues"),
        measure("Kueue objects", lambda: kueue.objects(tree), runs=50, note=f"{shape}: {len(objects)} objects"),
        measure(
            "KAI queues + schema check",
            lambda: [validate(q) for q in kai.queues(tree)],
            runs=20,
            note="jsonschema, the published Queue v2 schema",
        ),
        measure(
            "Kueue objects + schema check",
            lambda: [validate(o) for o in kueue.objects(tree)],
            runs=20,
            note="jsonschema, the published v1beta1 schemas",
        ),
    ]
