"""My workflows for the pages: my list, one workflow with its tasks and events, what to show of it.

- See: your own workflows always; someone else's when a role allows `workflow:Read` on its pool
  (`workflows.queries.check_readable`, shared with the API).
- Cancel: you submitted it or a role allows `workflow:Cancel` on its pool (`workflows.lifecycle.cancel`, which
  also does the cancelling; the page only asks it whether to show the button).
"""

from __future__ import annotations

import yaml
from django.db.models import Count, Prefetch, Q, prefetch_related_objects

from access import actions, policy
from workflows import queries
from workflows.lifecycle.cancel import cancel_refusal
from workflows.models import FINISHED_TASK, Task, TaskEvent, Workflow
from workflows.waiting import lay_waiting


def workflows_of(who, limit: int = 200) -> list[Workflow]:
    """The principal's own workflows, newest first, with their task counts (one query)."""
    subject = policy.principal(who)
    if not subject.user.is_authenticated:
        return []
    mine = Workflow.objects.filter(submitted_by=subject.user.pk)
    return list(
        policy.restrict(mine, subject, actions.WORKFLOW_LIST)
        .select_related("pool")
        .annotate(
            task_count=Count("tasks"), finished_tasks=Count("tasks", filter=Q(tasks__status__in=sorted(FINISHED_TASK)))
        )
        .order_by("-created_at", "-id")[:limit]
    )


def get_workflow(workflow_id: str, who, *, with_events: bool = True) -> Workflow:
    """The workflow if the principal may see it (`workflows.queries.check_readable`, as the API): else
    WorkflowNotFound (404) or PermissionDenied (403, saying why). Tasks (and their events) prefetched; with
    the events (the page), each task also says why its pod waits for a node (`workflows.waiting`)."""
    workflow = queries.get_workflow(workflow_id)
    queries.check_readable(workflow, who)
    tasks = Task.objects.order_by("id")
    if with_events:
        tasks = tasks.prefetch_related(Prefetch("events", queryset=TaskEvent.objects.order_by("at", "id")))
    prefetch_related_objects([workflow], Prefetch("tasks", queryset=tasks))
    if with_events:
        lay_waiting(workflow.pool_id, list(workflow.tasks.all()))  # the prefetched rows the page reads
    return workflow


def may_cancel(workflow: Workflow, who) -> bool:
    """Whether to offer Cancel on a workflow the principal can see (`workflows.lifecycle.cancel.cancel` decides)."""
    return not cancel_refusal(workflow, who)


def resolved_spec_yaml(workflow: Workflow) -> str:
    return yaml.safe_dump(workflow.spec, sort_keys=False, default_flow_style=False, width=100)


def pod_yaml(task: Task) -> str:
    return yaml.safe_dump(task.pod, sort_keys=False, default_flow_style=False, width=100)
