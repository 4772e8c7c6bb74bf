"""Submitting workflows: authorize, parse, resolve every task with the engine, validate, store, enqueue.

`submit` is the one use case behind the REST API, the CLI and the self-service page; it records the project
the workflow is charged to (`teams.services.charged_project`, docs/teams.md). It owns the transaction: a
workflow and its tasks are stored together, and pod creation is enqueued only once the rows are committed.
"""

from __future__ import annotations

import copy
import json
import math
import re
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

import yaml
from django.conf import settings
from django.db import connection, transaction

from access import actions, policy
from configs.validators import parse_timeout
from pools.confinement import Confinement, confined
from pools.control_image import control_image
from pools.engine import WorkflowContext, resolve
from pools.engine.placement import NodeInfo
from pools.models import Platform, Pool
from pools.services.compilation import compiled_platform
from pools.services.node_rules import capacities_for
from pools.services.placement_nodes import placement_candidates, placement_of
from portal import metrics
from portal.errors import PortalError
from portal.safe_yaml import spec_limits
from teams.services import charged_project
from workflows import admission_gate, credentials, enqueue, group_dns, parts
from workflows.errors import InvalidSpec, PoolInMaintenance, PoolNotFound, WorkflowInvalid
from workflows.models import Priority, Task, TaskEvent, Workflow, WorkflowName, WorkflowStatus
from workflows.parts import workflow_requests
from workflows.pool_loading import load_pool
from workflows.spec import SpecError, TaskSpec, WorkflowSpec, effective_timeouts, parse_workflow, substitute_tokens
from workflows.spot_advice import spot_capacity, spot_warnings
from workflows.submit_options import with_options
from workflows.templating import is_templated, render_spec

CREATE = actions.WORKFLOW_CREATE
MAINTENANCE_BYPASS = actions.POOL_MAINTENANCE  # only roles granting it (osmo-admin's *:*) submit during maintenance


@dataclass
class SubmitRequest:
    pool: str
    spec: str | dict
    who: object  # a request, a user or an access.policy.Principal
    priority: str = Priority.NORMAL
    dry_run: bool = False
    validation_only: bool = False
    source: str = "workflow.yaml"
    project: str = ""  # the project to charge; empty: the submitter's only project (teams.services)
    # OSMO's submission options (docs/workflows-api.md): template values, extra environment, labels.
    set_variables: list[str] = field(default_factory=list)
    set_string_variables: list[str] = field(default_factory=list)
    env_vars: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    # Idempotency: `<user id>:<request id>` from the API. A submission with a key already stored answers
    # that workflow instead of storing another (a retry after a lost connection: portal.dbretry).
    key: str = ""


@dataclass
class PlannedTask:
    task: object  # workflows.spec.TaskSpec
    platform: object  # pools.models.Platform
    resolution: object  # pools.engine.Resolution


@dataclass
class SubmitResult:
    workflow_id: str | None
    status: str
    pool: str
    tasks: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    project: str | None = None
    spec_name: str = ""
    rendered: str | None = None  # dry run: the spec as it would be submitted (templates rendered), as YAML

    def as_dict(self) -> dict:
        """The portal's answer, with OSMO's SubmitResponse keys (name, logs, spec; the view adds `overview`).
        A dry run's `name` is the spec's name, as OSMO answers it (its `workflow_id` stays null)."""
        return {
            "name": self.workflow_id or self.spec_name,
            "workflow_id": self.workflow_id,
            "status": self.status,
            "pool": self.pool,
            "project": self.project,
            "tasks": self.tasks,
            "warnings": self.warnings,
            "spec": self.rendered,
            "logs": "Workflow validation succeeded." if self.status == "VALID" else None,
            "dashboard_url": None,
        }


def submit(request: SubmitRequest) -> SubmitResult:
    try:
        result = _submit(request)
    except PortalError as error:
        # A pool that does not exist is no label value: names sent by clients would grow the series without bound.
        metrics.SUBMISSIONS.labels("" if isinstance(error, PoolNotFound) else request.pool, "refused").inc()
        raise
    metrics.SUBMISSIONS.labels(result.pool, result.status.lower()).inc()
    return result


def _submit(request: SubmitRequest) -> SubmitResult:
    who = policy.principal(request.who)
    pool = _authorized_pool(request.pool, who)
    stored = _already_submitted(request) if request.key else None
    if stored is not None:
        return stored
    project = charged_project(who, request.project)
    spec = _parse(request)
    use = credentials.plan(who, spec)  # refuses a credential the submitter does not have
    document = _json_safe(spec.document)
    priority = _priority(request.priority)
    exec_timeout, queue_timeout, timeout_warnings = effective_timeouts(
        spec, pool_defaults=_pool_timeouts(pool, "default"), pool_maxima=_pool_timeouts(pool, "max")
    )
    warnings = [*spec.warnings, *timeout_warnings]
    if request.dry_run or request.validation_only:
        ctx = _context(pool, spec.name + "-dry-run", who.user.get_username(), priority, spec)
        platforms, nodes = _placed(pool, spec)
        plan = _plan(spec, ctx, platforms, nodes)
        for planned in plan:
            credentials.decorate(planned.resolution.pod, planned.task, use.secrets(ctx.workflow_id))
        stub = Workflow(pool=pool, project=project, priority=priority, name=spec.name)
        charges, lead = _charges(stub, spec, platforms)
        parts.charge(stub, charges, lead, _planned_pods(plan))  # refused as a submission is
        candidates = placement_candidates({p.platform.pk for p in plan}) if request.dry_run else None
        tasks = [_dry_run_row(p, candidates, parts.charge_of(charges, p.platform.name)) for p in plan]
        if request.dry_run and use.secrets(ctx.workflow_id):
            for row, planned in zip(tasks, plan, strict=True):
                row["provenance"].update(credentials.provenance(planned.resolution.pod, use.secrets(ctx.workflow_id)))
        status = "DRY_RUN" if request.dry_run else "VALID"
        rendered = yaml.safe_dump(document, sort_keys=False) if request.dry_run else None
        warnings += _plan_warnings(plan) + spot_warnings(plan, pool, exec_timeout)
        return SubmitResult(None, status, pool.name, tasks, warnings, _name(project), spec.name, rendered)
    # Read before the transaction, whose `_next_id` locks the workflow's name until commit: submissions of one
    # name wait for each other's resolution and writes only, not for these queries (tokens never change a
    # platform); and outside a transaction the gate may answer from its per-process cache
    # (quotas.services.charge_cache).
    platforms, nodes = _placed(pool, spec)
    stub = Workflow(pool=pool, project=project, priority=priority, name=spec.name)
    charges, lead = _charges(stub, spec, platforms)  # quotas' admission gate, when installed
    on_spot = spot_capacity(set(platforms))  # the spot advice's one read, outside the transaction's lock
    with transaction.atomic():
        workflow_id = _next_id(spec.name)
        workflow_uuid = uuid.uuid4()
        spec = substitute_tokens(spec, workflow_id, str(workflow_uuid), pool.backend.namespace)
        ctx = _context(pool, workflow_id, who.user.get_username(), priority, spec, workflow_uuid)
        plan = _plan(spec, ctx, platforms, nodes)
        workflow = Workflow(
            workflow_id=workflow_id,
            uuid=workflow_uuid,
            name=spec.name,
            pool=pool,
            submitted_by=who.user,
            project=project,
            priority=priority,
            spec=document,
            labels=spec.labels,
            warnings=warnings + _plan_warnings(plan) + spot_warnings(plan, pool, exec_timeout, on_spot),
            exec_timeout_seconds=_seconds(exec_timeout),
            queue_timeout_seconds=_seconds(queue_timeout),
            requests=workflow_requests(p.resolution.pod for p in plan),
            submit_key=request.key or None,
            credential_secrets=use.secrets(workflow_id),
        )
        charged = parts.charge(workflow, charges, lead, _planned_pods(plan))  # refuses what can never run
        [workflow] = Workflow.objects.bulk_create([workflow])
        tasks = Task.objects.bulk_create([_task_row(workflow, spec, p, pool, charges) for p in plan])
        parts.store(workflow, charged)
        TaskEvent.objects.bulk_create(
            [TaskEvent(task=t, kind="SUBMITTED", message=f"submitted by {who.name}", at=t.created_at) for t in tasks]
        )
        if workflow.status == WorkflowStatus.QUEUED:
            gate, waiting = admission_gate.current(), {part.node_pool for part in charged if part.admitted_at is None}
            transaction.on_commit(lambda: gate.on_queued(waiting), robust=True)
        else:
            enqueue.create_pods(workflow.pk)  # after commit; a broker that is down does not fail the submission
    return SubmitResult(
        workflow_id,
        str(workflow.status),
        pool.name,
        [{"name": t.name, "platform": t.platform, "pod_name": t.pod_name} for t in tasks],
        workflow.warnings,
        _name(project),
    )


def _already_submitted(request: SubmitRequest) -> SubmitResult | None:
    """The answer for the workflow an earlier run of this keyed request stored (now as it stands), or None.
    Dry runs and validations store nothing, so they are never answered from a key."""
    if request.dry_run or request.validation_only:
        return None
    workflow = Workflow.objects.select_related("pool", "project").filter(submit_key=request.key).first()
    if workflow is None:
        return None
    tasks = workflow.tasks.order_by("id").values("name", "platform", "pod_name")
    return SubmitResult(
        workflow.workflow_id,
        str(workflow.status),
        workflow.pool.name,
        [dict(task) for task in tasks],
        workflow.warnings,
        _name(workflow.project),
    )


def _charges(stub: Workflow, spec: WorkflowSpec, platforms: list[Platform]) -> tuple[parts.Charges | None, str]:
    """Where each platform's tasks are charged (the admission gate's answer, None without one) and the lead
    task's platform, whose node pool `Workflow.node_pool` names."""
    lead = next((p for t, p in zip(spec.tasks(), platforms, strict=True) if t.lead), platforms[0])
    return parts.charges(stub, [p.name for p in platforms]), lead.name


def _planned_pods(plan: list[PlannedTask]) -> list[parts.PlannedPod]:
    return [parts.PlannedPod(p.task.name, p.platform.name, p.resolution.pod) for p in plan]


def _parse(request: SubmitRequest) -> WorkflowSpec:
    """The spec, rendered first when it is a template (OSMO's `default-values` and `--set`), then with the
    submission's extra environment and labels (`--set-env`, `--label`) merged in and checked again."""
    text = request.spec
    if isinstance(text, str) and is_templated(text, request.set_variables, request.set_string_variables):
        limits = spec_limits()
        text = render_spec(
            text,
            request.set_variables,
            request.set_string_variables,
            max_chars=settings.WORKFLOW_SPEC_MAX_BYTES,
            limits=limits,
        )
    elif request.set_variables or request.set_string_variables:
        raise InvalidSpec("values can only be set for a spec sent as text", field="set_variables")
    spec = parse_workflow(text, source=request.source, max_tasks=settings.WORKFLOW_MAX_TASKS, limits=spec_limits())
    if not request.env_vars and not request.labels:
        return spec
    document = with_options(spec.document, request.env_vars, request.labels)
    return parse_workflow(document, source=request.source, max_tasks=settings.WORKFLOW_MAX_TASKS)


def resolve_retry(workflow: Workflow, task: Task, retry_id: int) -> dict:
    """The pod of attempt `retry_id` of a task (a RESCHEDULE exit action): the task resolved again from the
    stored spec on its platform with `WF_RETRY_ID` = `retry_id`, as OSMO renders each attempt's pod afresh.
    Node rules are not checked again (the workflow was admitted; the scheduler decides). Raises a
    DomainError, SpecError or EngineError when the task no longer resolves (its pool, platform or
    templates changed since it was submitted)."""
    pool = load_pool(workflow.pool.name)
    platform = next((p for p in pool.loaded_platforms if p.name == task.platform), None) if pool else None
    if platform is None:
        raise WorkflowInvalid(
            f"platform {task.platform} of pool {workflow.pool.name} no longer exists",
            field="platform",
            value=task.platform,
        )
    spec = parse_workflow(workflow.spec, source=f"{workflow.workflow_id} (stored spec)", max_tasks=10**6)
    spec = substitute_tokens(spec, workflow.workflow_id, str(workflow.uuid), task.namespace)
    task_spec = next(t for t in spec.tasks() if t.name == task.name)
    context = _context(
        pool,
        workflow.workflow_id,
        workflow.submitted_by.get_username(),
        workflow.priority,
        spec,
        workflow.uuid,
        group_name=task.group_name,
        retry_id=retry_id,
    )
    resolution = resolve(compiled_platform(platform), spec.task_input(task_spec), context, None)
    problems = _failures(resolution.validation)
    if problems:
        raise WorkflowInvalid(problems[0]["reason"], field=problems[0]["field"], value=problems[0]["value"])
    _named(resolution.pod, spec, task_spec, str(workflow.uuid))
    return credentials.decorate(resolution.pod, task_spec, workflow.credential_secrets)


def _named(pod: dict, spec: WorkflowSpec, task: TaskSpec, workflow_uuid: str) -> dict:
    """The pod of a task of a group of two or more tasks gets its DNS name (workflows.group_dns)."""
    if task.group in group_dns.networked_groups(t.group for t in spec.tasks()):
        group_dns.decorate(pod, workflow_uuid, task.group, task.name)
    return pod


_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")  # an escaped NUL, not a literal backslash-u0000


def _json_safe(document: dict) -> dict:
    """The document as it will be stored (JSON): dates become strings; NaN, infinity and NUL are refused
    (PostgreSQL's jsonb cannot hold them)."""
    try:
        text = json.dumps(document, default=str, allow_nan=False)
    except ValueError:
        raise SpecError("numbers must be finite: NaN and infinity are not allowed") from None
    except TypeError as error:
        raise SpecError(f"the spec cannot be stored as JSON: {error}") from None
    except RecursionError:
        raise SpecError("the spec is nested too deeply") from None
    if "\\u0000" in text and _NUL.search(text):
        raise SpecError("the spec contains a NUL character (\\u0000), which is not allowed")
    return json.loads(text)


def unknown_pool_for(who, name: str) -> bool:
    """Whether `who` is told that pool `name` does not exist: it does not, and `who` may submit to some
    pool (someone who may submit nowhere is refused by the policy instead, learning nothing)."""
    return ("\x00" in name or not Pool.objects.filter(name=name).exists()) and policy.restrict(
        Pool.objects.all(), who, CREATE
    ).exists()


def _authorized_pool(name: str, who) -> Pool:
    pool = load_pool(name)
    if pool is None:
        raise PoolNotFound(f"no pool named {name!r}", field="pool", value=name)
    policy.require(
        who, CREATE, actions.pool(name), refusal=f"may not submit workflows to pool {name}", field="pool", value=name
    )
    if pool.enable_maintenance and not who.decide(MAINTENANCE_BYPASS, actions.pool(name)).allowed:
        raise PoolInMaintenance(
            f"pool {name} is in maintenance; only administrators may submit now", field="pool", value=name
        )
    return pool


def _name(project) -> str | None:
    return project.name if project is not None else None


def _priority(value: str) -> str:
    upper = str(value or Priority.NORMAL).upper()
    if upper not in Priority.values:
        refusal = WorkflowInvalid(
            f"unknown priority; expected one of {', '.join(Priority.values)}", field="priority", value=value
        )
        refusal.osmo_code = "USAGE"  # a bad option, not a resource refusal
        raise refusal
    return upper


def _placed(pool: Pool, spec: WorkflowSpec) -> tuple[list[Platform], dict]:
    """Each task's platform (in `spec.tasks()` order) and those platforms' node capacities (one query)."""
    by_name = {p.name: p for p in pool.loaded_platforms}  # `load_pool` linked each to the pool
    platforms = [by_name[spec.platform_of(task, pool.default_platform, set(by_name))] for task in spec.tasks()]
    return platforms, capacities_for({p.pk: p for p in platforms}.values())


def _plan(spec: WorkflowSpec, ctx: WorkflowContext, platforms: list[Platform], nodes: dict) -> list[PlannedTask]:
    """Resolve every task on its platform (`_placed`) against the live inventory; refuse with every problem found."""
    plan, problems = [], []
    for task, platform in zip(spec.tasks(), platforms, strict=True):
        group_ctx = WorkflowContext(**{**vars(ctx), "group_name": task.group})
        resolution = resolve(compiled_platform(platform), spec.task_input(task), group_ctx, nodes[platform.pk])
        plan.append(PlannedTask(task, platform, resolution))
        problems += [_problem(task, platform.name, p) for p in _failures(resolution.validation)]
    if problems:
        first = problems[0]
        raise WorkflowInvalid(
            f"{len(problems)} problem{'s' if len(problems) > 1 else ''}; first: task "
            f"{first['task']} on {first['platform']}: {first['reason']}",
            field=first["field"],
            value=first["value"],
            problems=problems,
        )
    return plan


def _failures(validation: dict) -> list[dict]:
    found = [{"field": "resources", "value": f.get("left"), "reason": f["message"]} for f in validation["static"]]
    found += [{"field": g["field"], "value": g["value"], "reason": g["reason"]} for g in validation["gates"]]
    found += [{"field": v["path"], "value": None, "reason": v["reason"]} for v in validation["schema"]]
    nodes = validation.get("nodes")
    if nodes and not nodes["passed"]:
        reason = nodes["error"] or "no node of the platform satisfies the resource rules"
        details = [f"{node}: {failure['message']}" for node, failure in list(nodes["failures"].items())[:5]]
        found.append(
            {"field": "resources", "value": None, "reason": reason + (f" ({'; '.join(details)})" if details else "")}
        )
    return found


def _problem(task, platform: str, failure: dict) -> dict:
    return {
        "task": task.name,
        "platform": platform,
        "field": f"{task.path}.{failure['field']}",
        "value": failure["value"],
        "reason": failure["reason"],
    }


def _plan_warnings(plan: list[PlannedTask]) -> list[str]:
    return [f"task {p.task.name}: {w}" for p in plan for w in p.resolution.warnings]


def _context(
    pool: Pool, workflow_id: str, submitted_by: str, priority: str, spec: WorkflowSpec, workflow_uuid=None, **more
) -> WorkflowContext:
    return WorkflowContext(
        workflow_id=workflow_id,
        workflow_uuid=str(workflow_uuid or ""),
        submitted_by=submitted_by,
        priority=priority,
        labels=dict(spec.labels),
        scheduler_name=pool.backend.scheduler_name,
        **control_image(pool.backend),
        **more,
    )


def _next_id(name: str) -> str:
    """`<name>-<n>`: one upsert that increments and returns the per-name counter; the row stays locked
    until the workflow is committed (PostgreSQL and SQLite ≥ 3.35 both have ON CONFLICT … RETURNING)."""
    table = connection.ops.quote_name(WorkflowName._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (name, last_number) VALUES (%s, 1) ON CONFLICT (name) "
            f"DO UPDATE SET last_number = {table}.last_number + 1 RETURNING last_number",
            [name],
        )
        number = cursor.fetchone()[0]
    return f"{name}-{number}"


def _task_row(workflow: Workflow, spec: WorkflowSpec, planned: PlannedTask, pool: Pool, charges) -> Task:
    node_pool, selector = parts.task_charge(charges, planned.platform.name)
    pod = confined(copy.deepcopy(planned.resolution.pod), selector) if selector else planned.resolution.pod
    pod = credentials.decorate(pod, planned.task, workflow.credential_secrets)
    _named(pod, spec, planned.task, str(workflow.uuid))
    group = next(g for g in spec.groups if g.name == planned.task.group)
    return Task(
        workflow=workflow,
        name=planned.task.name,
        group_name=planned.task.group,
        lead=planned.task.lead,
        ignore_non_lead_status=group.ignore_non_lead_status,
        platform=planned.platform.name,
        node_pool=node_pool,
        pod=pod,
        pod_name=pod["metadata"]["name"],
        namespace=pool.backend.namespace,
        exit_actions=planned.task.exit_actions,
    )


def _dry_run_row(
    planned: PlannedTask, candidates: dict[int, list[NodeInfo]] | None, charge: admission_gate.Charge | None = None
) -> dict:
    """Validation only (`candidates` None): the verdict. Dry run: the pod as it would be created (confined to
    the node pool it is charged to), its provenance and placement."""
    row = {"name": planned.task.name, "platform": planned.platform.name, "ok": planned.resolution.ok}
    if candidates is not None:
        if charge is not None:
            confined(planned.resolution.pod, charge.node_selector)
        row.update(planned.resolution.to_dict())
        placement = placement_of(planned.resolution.pod, candidates.get(planned.platform.pk, []))
        row["placement"] = admission_gate.named_reasons(placement, charge)
        if charge is not None and charge.node_selector and planned.resolution.pod:
            confinement = Confinement(charge.node_pool, dict(charge.node_selector))
            row["provenance"] = {**row["provenance"], **confinement.provenance()}  # "added by the portal: …"
            row["confinement"] = confinement.to_dict()
    return row


def _pool_timeouts(pool: Pool, kind: str) -> dict[str, timedelta | None]:
    return {
        f"{name}_timeout": parse_timeout(getattr(pool, f"{kind}_{name}_timeout"), f"{kind}_{name}_timeout")
        for name in ("exec", "queue")
    }


def _seconds(delta: timedelta | None) -> int | None:
    # Round up: a 500ms timeout must not become "no time at all".
    return math.ceil(delta.total_seconds()) if delta is not None else None
