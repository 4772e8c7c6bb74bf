"""Why a task's pod waits for a node, in words the workflow page and the API share.

A WAITING task with no node and the scheduler's reason in `error` is unschedulable now. When an autoscaled
machine pool of its platform would take the pod and is adding a node or can add one
(`pools.services.machine_pool_shapes.machine_pools_taking`, as a cluster autoscaler decides a scale-up), it
waits for that machine pool: "Waiting for machine pool gpu-t4-spot to add a node (0 → 1 of max 4)", then,
once the new node is in the inventory but not ready, "Waiting for machine pool gpu-t4-spot: node
gpu-t4-spot-x7 is starting (1 of max 4)". Otherwise (no such machine pool, or every one at its maximum with
its nodes ready) it is "Not schedulable yet" with the scheduler's reason. Read when a page or answer is built,
so it follows the machine pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from pools.services.machine_pool_shapes import ScaleUp, machine_pools_taking
from workflows.models import Task, TaskStatus

NOT_SCHEDULABLE = "Not schedulable yet"


@dataclass(frozen=True)
class Waiting:
    reason: str  # the scheduler's: "Unschedulable: 0/3 nodes are available: ..."
    scale_up: ScaleUp | None = None  # the machine pool that is adding or can add a node for it (None: none)

    @property
    def machine_pool(self) -> str:
        return self.scale_up.machine_pool if self.scale_up else ""

    @property
    def headline(self) -> str:
        return f"Waiting for {self.scale_up.waits_for()}" if self.scale_up else NOT_SCHEDULABLE

    @property
    def text(self) -> str:
        return self.headline if self.scale_up else f"{NOT_SCHEDULABLE}: {self.reason}"


def unschedulable(task: Task) -> bool:
    return task.status == TaskStatus.WAITING and not task.node and bool(task.error)


def lay_waiting(pool_id: int, tasks: list[Task]) -> list[Task]:
    """Lays `waiting` (a Waiting, or None when its pod is not waiting for a node) on each task of a workflow of
    pool `pool_id`. No query when none is unschedulable; otherwise the same few whatever their number."""
    stuck = [task for task in tasks if unschedulable(task)]
    for task in tasks:
        task.waiting = None
    taking = machine_pools_taking([(pool_id, task.platform, task.pod) for task in stuck])
    for task, scale_up in zip(stuck, taking, strict=True):
        task.waiting = Waiting(task.error, scale_up)
    return tasks
