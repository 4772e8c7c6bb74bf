"""Advice for a workflow bound for spot capacity (the seed's "Spot Instance Considerations"; docs/workflows.md,
"Spot advice"): warnings, never errors, so the submission still goes. For each task whose platform runs on spot
(`pools.services.spot_capacity`):

- an interruption would fail it: the exit action for a spot interruption (code 3001, then the container's 143:
  the task's exitActions, then the pool's default_exit_actions) is not RESCHEDULE;
- its run may be long: no exec timeout, or one above `WORKFLOW_SPOT_LONG_TIMEOUT_SECONDS`; the longer a task
  runs on spot, the likelier a reclaim, and a retry starts over unless the task checkpoints;
- it keeps state there: its pod mounts a persistentVolumeClaim.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings

from pools.services.spot_capacity import persistent_claims, spot_capacity

__all__ = ["spot_capacity", "spot_warnings"]
from workflows.spec_fields import format_duration


def spot_warnings(plan, pool, exec_timeout: timedelta | None, on_spot: dict | None = None) -> list[str]:
    """`plan`: the submission's planned tasks (task, platform, resolution); `on_spot`: `spot_capacity` of their
    platforms, read here when not given."""
    from workflows.lifecycle.exits import RESCHEDULE, exit_action
    from workflows.lifecycle.interruption import INTERRUPTED_EXIT_CODE

    if on_spot is None:
        on_spot = spot_capacity({p.platform.pk: p.platform for p in plan}.values())
    if not on_spot:
        return []
    long_after = timedelta(seconds=settings.WORKFLOW_SPOT_LONG_TIMEOUT_SECONDS)
    warnings = []
    for planned in plan:
        capacity = on_spot.get(planned.platform.pk)
        if capacity is None:
            continue
        where = f"task {planned.task.name}: platform {planned.platform.name} runs on spot capacity ({capacity})"
        action, _ = exit_action(
            INTERRUPTED_EXIT_CODE, planned.task.exit_actions, pool.default_exit_actions, also=(143,)
        )
        if action != RESCHEDULE:
            warnings.append(
                f"{where}, which AWS may reclaim with two minutes' notice, and the task has no RESCHEDULE exit "
                f"action for an interruption (exit code {INTERRUPTED_EXIT_CODE} or 143): an interruption would fail "
                f'it. Add exitActions: {{RESCHEDULE: "{INTERRUPTED_EXIT_CODE},143"}} and checkpoint its work'
            )
        if exec_timeout is None or exec_timeout > long_after:
            limit = format_duration(long_after)
            said = (
                f"no exec timeout (it may run longer than {limit})"
                if exec_timeout is None
                else f"an exec timeout of {format_duration(exec_timeout)} (more than {limit})"
            )
            warnings.append(
                f"{where}, and the workflow has {said}: the longer a task "
                "runs on spot, the likelier a reclaim, and a retry starts over unless the task checkpoints (a "
                "preStop hook that saves its state)"
            )
        claims = persistent_claims(planned.resolution.pod)
        if claims:
            warnings.append(
                f"{where}, and its pod keeps state in persistentVolumeClaim volumes ({', '.join(claims)}): spot "
                "suits fault-tolerant batch work, not stateful applications or databases"
            )
    return warnings
