"""GPUs that running tasks hold per pool, for OSMO's pool quota (`GET /api/pool_quota`, `osmo pool list`).

OSMO counts the GPUs of RUNNING tasks: those of HIGH and NORMAL priority against the pool's quota (LOW is
preemptible and does not count), all of them as the pool's total usage. A task's GPUs are what its resolved
pod requests (`pools.engine.placement_fit.pod_requests`). One query, whatever the number of tasks.
"""

from __future__ import annotations

from collections import defaultdict

from pools.engine.placement_fit import pod_requests
from pools.services.pool_quota import GpuUsage
from workflows.models import Priority, Task, TaskStatus

GPU = "nvidia.com/gpu"
COUNTED_BY_QUOTA = {Priority.HIGH, Priority.NORMAL}


def running_gpus(pool_names: list[str] | None = None) -> dict[str, GpuUsage]:
    """Per pool name (every pool when None), the GPUs its running tasks request."""
    tasks = Task.objects.filter(status=TaskStatus.RUNNING)
    if pool_names is not None:
        tasks = tasks.filter(workflow__pool__name__in=pool_names)
    quota: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for pool, priority, pod in tasks.values_list("workflow__pool__name", "workflow__priority", "pod"):
        gpus = pod_requests(pod).get(GPU, 0)
        total[pool] += gpus
        if priority in COUNTED_BY_QUOTA:
            quota[pool] += gpus
    return {pool: GpuUsage(quota=quota[pool], total=total[pool]) for pool in total}
