"""My workflows for the pages: my list, one workflow with its tasks and events, what to show of it.

- See: your own workflows always; someone else's when a role allows `workflow:Read` on its pool
  (`workflows.queries.check_readable`, shared with the API).
- Cancel: you submitted it or a role allows `workflow:Cancel` on its pool (`workflows.lifecycle.cancel`, which
  also does the cancelling; the page only asks it whether to show the button).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import yaml
from django.db.models import Count, OuterRef, Prefetch, Q, Subquery, prefetch_related_objects
from django.db.models.functions import Coalesce

from access import actions, policy
from portal.errors import PortalError
from workflows import queries
from workflows.filters import filter_workflows
from workflows.lifecycle.cancel import cancel_refusal
from workflows.models import FINISHED_TASK, Task, TaskEvent, Workflow
from workflows.waiting import lay_waiting

PAGE_SIZE = 50
EPOCH, MICROSECOND = datetime(1970, 1, 1, tzinfo=UTC), timedelta(microseconds=1)


@dataclass(frozen=True)
class WorkflowPage:
    rows: list[Workflow]
    after: str  # the cursor of the next (older) page; "" on the last page
    pools: list[str]  # the pools of the principal's workflows, for the filter


def workflows_of(who, *, status: str = "", pool: str = "", search: str = "", after: str = "") -> WorkflowPage:
    """The principal's own workflows, newest first, with their task counts: `status`, `pool` and a `search` of
    the workflow id narrow them, `after` (a cursor, `cursor_of` a row) starts past a row, keyset-paginated
    (a page costs the same two queries however deep it is, and however many workflows the viewer has). A cursor
    that is not one: PortalError."""
    subject = policy.principal(who)
    if not subject.user.is_authenticated:
        return WorkflowPage([], "", [])
    mine = policy.restrict(Workflow.objects.filter(submitted_by=subject.user.pk), subject, actions.WORKFLOW_LIST)
    pools = sorted(set(mine.values_list("pool__name", flat=True).distinct()))
    rows = filter_workflows(mine, {"statuses": [status] if status else [], "pools": [pool] if pool else []})
    if search:
        rows = rows.filter(workflow_id__icontains=search)
    if after:
        at, pk = _cursor(after)
        rows = rows.filter(Q(created_at__lt=at) | Q(created_at=at, pk__lt=pk))
    # each row's task counts by a subquery of its own: a join counted with the rows would have the database count
    # the tasks of every workflow of the viewer before keeping a page (docs/scale.md)
    tasks = Task.objects.filter(workflow=OuterRef("pk")).order_by().values("workflow")
    found = list(
        rows.select_related("pool")
        .annotate(
            task_count=Coalesce(Subquery(tasks.annotate(n=Count("pk")).values("n")), 0),
            finished_tasks=Coalesce(
                Subquery(tasks.filter(status__in=sorted(FINISHED_TASK)).annotate(n=Count("pk")).values("n")),
                0,
            ),
        )
        .order_by("-created_at", "-id")[: PAGE_SIZE + 1]
    )
    more = len(found) > PAGE_SIZE
    return WorkflowPage(found[:PAGE_SIZE], cursor_of(found[PAGE_SIZE - 1]) if more else "", pools)


def cursor_of(workflow: Workflow) -> str:
    """`<microseconds since the epoch>.<id>` of a row: where the next page starts."""
    return f"{(workflow.created_at - EPOCH) // MICROSECOND}.{workflow.pk}"


def _cursor(text: str) -> tuple[datetime, int]:
    micros, dot, pk = text.partition(".")
    if not (dot and micros.isascii() and micros.isdigit() and pk.isascii() and pk.isdigit()):
        raise PortalError("is not a page cursor (take the Older link's)", field="after", value=text)
    if len(micros) > 17 or len(pk) > 18:
        raise PortalError("is out of range", field="after", value=text)
    return EPOCH + int(micros) * MICROSECOND, int(pk)


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
