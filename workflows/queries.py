"""Reading workflows, with who may see what decided by `access.policy` (the API, the CLI and pages use it).

* A user always sees the workflows they submitted.
* Other users' workflows are visible in the pools where the principal holds `workflow:List` (listing)
  or `workflow:Read` (one workflow, its spec and events), as `access.policy` decides for `pool/<name>`.
* Listing defaults to the caller's own workflows (OSMO); `users=[…]` or `all_users` widen it, within
  what the policy lets them see.

`who=None` is the operator on the command line: everything is visible.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime

from django.db.models import Count, QuerySet

from access import actions, policy
from portal.errors import PermissionDenied
from portal.numbers import MAX_PAGE
from workflows.errors import WorkflowNotFound
from workflows.filters import filter_workflows
from workflows.models import FINISHED_WORKFLOW, Task, TaskEvent, Workflow
from workflows.waiting import lay_waiting

LIST, READ = actions.WORKFLOW_LIST, actions.WORKFLOW_READ


def missing(workflow_id: str) -> WorkflowNotFound:
    """The answer for an unknown workflow, and for one the asker may not see (`check_readable`)."""
    return WorkflowNotFound(f"no workflow {workflow_id!r}", field="workflow_id", value=workflow_id)


def get_workflow(workflow_id: str) -> Workflow:
    if not workflow_id or "\x00" in workflow_id:  # no id has one (PostgreSQL refuses NUL in text)
        raise missing(workflow_id)
    workflow = (
        Workflow.objects.select_related("pool__backend", "submitted_by", "project")
        .filter(workflow_id=workflow_id)
        .first()
    )
    if workflow is None:
        raise missing(workflow_id)
    return workflow


@dataclass
class WorkflowQuery:
    users: list[str] = field(default_factory=list)
    pools: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    priority: list[str] = field(default_factory=list)
    name: str = ""
    submitted_after: datetime | None = None
    submitted_before: datetime | None = None
    label: list[str] = field(default_factory=list)  # OSMO's selectors: `key=value` or `key` (present)
    no_label: list[str] = field(default_factory=list)  # `key` absent, `key=value` not that value
    tags: list[str] = field(default_factory=list)  # the portal has no workflow tags: no workflow has one
    app: str = ""  # nor apps
    all_users: bool = False
    offset: int = 0
    limit: int = 20
    order: str = "desc"


@dataclass
class WorkflowPage:
    workflows: list[Workflow]
    more_entries: bool
    offset: int
    limit: int


def list_workflows(who, query: WorkflowQuery) -> WorkflowPage:
    """One page of workflows, newest first (or oldest with order=asc). Two queries whatever the page size:
    the principal's roles (memoised per request) and the page itself (`policy.restrict` adds a filter)."""
    rows = Workflow.objects.select_related("pool", "submitted_by", "project").annotate(task_count=Count("tasks"))
    if who is not None:
        principal = policy.principal(who)
        rows = policy.restrict(rows, principal, LIST)  # own workflows, and others' in pools it may list
        if not query.users and not query.all_users:
            me = principal.user
            rows = rows.filter(submitted_by_id=me.pk) if me.is_authenticated else rows.none()
    rows = filter_workflows(rows, asdict(query))  # users, pools, statuses, … (workflows/filters.py)
    rows = rows.order_by(*(("created_at", "id") if query.order == "asc" else ("-created_at", "-id")))
    limit = max(1, min(query.limit, MAX_PAGE))
    page = list(rows[query.offset : query.offset + limit + 1])
    return WorkflowPage(page[:limit], len(page) > limit, query.offset, limit)


def visible_workflow(who, workflow_id: str) -> Workflow:
    """The workflow, if `who` submitted it or may `workflow:Read` its pool; else 404 (see check_readable)."""
    workflow = get_workflow(workflow_id)
    if who is not None:
        check_readable(workflow, who)
    return workflow


def check_readable(workflow: Workflow, who) -> None:
    """The one rule for seeing a workflow (API, CLI and pages): its submitter, or `workflow:Read` on its pool.
    Anyone else gets exactly the answer for a workflow that does not exist (404 `workflow_not_found`, the
    same reason): ids are guessable (`<name>-<n>`), and a 403 would confirm that another team runs one.
    The refusal, with its real reason, goes to the audit log when `who` is a request (`policy.require`)."""
    try:
        policy.require(who, READ, obj=workflow, target=actions.workflow(workflow.workflow_id))
    except PermissionDenied:
        raise missing(workflow.workflow_id) from None


def tasks_of(workflow: Workflow) -> QuerySet[Task]:
    return Task.objects.filter(workflow=workflow).order_by("id")


def with_tasks(workflow: Workflow) -> Workflow:
    """The workflow with `task_rows` (each with `waiting`: why its pod waits for a node) and `task_count`, as
    the detail answer shows them."""
    workflow.task_rows = lay_waiting(workflow.pool_id, list(tasks_of(workflow)))
    workflow.task_count = len(workflow.task_rows)
    return workflow


def events_of(workflow: Workflow) -> QuerySet[TaskEvent]:
    return TaskEvent.objects.filter(task__workflow=workflow).select_related("task").order_by("at", "id")


def unfinished_on_platforms(platforms: list[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    """Per (pool, platform) some unfinished workflow has a task on: those workflows' ids, oldest first (one
    query). What `pools.platform_use` asks before a platform is removed with its machine pool."""
    wanted = set(platforms)
    rows = (
        Task.objects.filter(workflow__pool__name__in={pool for pool, _ in wanted}, platform__in={p for _, p in wanted})
        .exclude(workflow__status__in=sorted(FINISHED_WORKFLOW))
        .values_list("workflow__pool__name", "platform", "workflow__workflow_id")
        .order_by("workflow__created_at", "workflow_id")
        .distinct()
    )
    found: dict[tuple[str, str], list[str]] = {}
    for pool, platform, workflow_id in rows:
        if (pool, platform) in wanted and workflow_id not in found.get((pool, platform), []):
            found.setdefault((pool, platform), []).append(workflow_id)
    return found
