"""Creating the pods of a workflow's PENDING tasks: the stored manifest plus this portal's instance label, under a
deterministic name, so a second attempt finds (adopts) the first one's pod instead of creating another.

On a backend whose quotas KAI-Scheduler or Kueue enforces (`Backend.quota_scheduler`), every pod also carries that
scheduler's routing: its `schedulerName` and the queue labels of the workflow's project in the node pool its own
task is charged to (`Task.node_pool`, the lead's `Workflow.node_pool` for tasks charged before parts existed;
clusters.schedulers.workload_routing; docs/quota-schedulers.md)."""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from clusters.kube import pods, secrets, services
from clusters.kube.connection import connect
from clusters.kube.errors import KubeError
from clusters.schedulers import DELEGATING, TranslationError, workload_routing
from pools.engine.resolve import label_value
from portal import metrics
from portal.errors import DomainError
from workflows import credentials, group_dns
from workflows.lifecycle.observe import container_of, observe
from workflows.lifecycle.settle import fail_task, settle
from workflows.lifecycle.transitions import (
    PENDING,
    WAITING,
    backend_of,
    delete_later,
    happened,
    lock,
    record_event,
    transition,
)
from workflows.models import Task, TaskStatus, Workflow, WorkflowStatus

log = logging.getLogger(__name__)


def instance() -> str:
    """This portal's value of the `pool-portal/instance` label."""
    return label_value(settings.PORTAL_INSTANCE) or "default"


Routing = tuple[str, dict[str, str]]  # (spec.schedulerName, labels)


def routing(workflow: Workflow, node_pool: str = "") -> Routing | None:
    """The delegated scheduler's routing for the workflow's pods charged to `node_pool` (default: the lead's);
    None when the portal enforces quotas itself. Raises TranslationError (a workflow without a project has no
    queue)."""
    backend = workflow.pool.backend
    if backend.quota_scheduler not in DELEGATING:
        return None
    project = workflow.project.name if workflow.project_id else None
    return workload_routing(backend, project, node_pool or workflow.node_pool)


def manifest(task: Task, route: Routing | None = None) -> dict:
    """The pod to create: the stored `Task.pod`, exactly, plus the instance label (and `route`, when given)."""
    pod = copy.deepcopy(task.pod)
    metadata = pod.setdefault("metadata", {})
    labels = {**(metadata.get("labels") or {})}
    if route is not None:
        scheduler_name, route_labels = route
        labels.update(route_labels)
        if scheduler_name:
            pod.setdefault("spec", {})["schedulerName"] = scheduler_name
    metadata["labels"] = {**labels, pods.INSTANCE_LABEL: instance()}
    return pod


@dataclass
class CreateResult:
    created: int = 0  # pods created now
    adopted: int = 0  # pods that already existed (an earlier attempt created them)
    failed: int = 0  # tasks failed by a refusal (4xx, someone else's pod)


def create_pods(workflow_pk: int, *, connect_to=connect) -> CreateResult:
    """Create the pods of the workflow's PENDING tasks. Idempotent; raises KubeError only when transient.

    A 4xx refusal (invalid pod, forbidden, quota) or a pod of the same name owned by someone else fails
    that task (FAILED_BACKEND_ERROR with the API's message). A transient error stops here and propagates,
    for Celery to retry: tasks already created are WAITING and are skipped next time.
    """
    result = CreateResult()
    workflow = Workflow.objects.select_related("pool__backend", "project").filter(pk=workflow_pk).first()
    if workflow is None or workflow.is_finished or workflow.status == WorkflowStatus.QUEUED:
        return result  # a QUEUED workflow's pods wait for admission (workflows.lifecycle.admit_hold_preempt.admit)
    tasks = list(workflow.tasks.filter(status=PENDING).order_by("id"))
    if not tasks:
        return result
    for task in tasks:
        task.workflow = workflow
    try:
        routes = {pool: routing(workflow, pool) for pool in {task.node_pool for task in tasks}}
    except TranslationError as error:  # the cluster's scheduler would never admit it: say why, once
        for task in tasks:
            result.failed += fail_task(
                task, TaskStatus.FAILED_BACKEND_ERROR, str(error), kind="BACKEND_ERROR", from_statuses=(PENDING,)
            )
        return result
    try:
        kube = connect_to(workflow.pool.backend)
    except KubeError as error:
        if error.transient:
            raise
        for task in tasks:  # the backend's connection settings are unusable: retrying will not help
            result.failed += fail_task(
                task, TaskStatus.FAILED_BACKEND_ERROR, str(error), kind="BACKEND_ERROR", from_statuses=(PENDING,)
            )
        return result
    backend = workflow.pool.backend.name
    refusal = _write_secrets(kube, workflow, tasks) or _write_services(kube, workflow, tasks)
    if refusal:
        kube.close()
        for task in tasks:  # the pods could not pull or read what they need: say why, once per task
            result.failed += fail_task(
                task, TaskStatus.FAILED_BACKEND_ERROR, refusal, kind="BACKEND_ERROR", from_statuses=(PENDING,)
            )
        return result
    try:
        for task in tasks:
            try:
                outcome = pods.create_pod(kube, task.namespace, manifest(task, routes[task.node_pool]))
            except KubeError as error:
                metrics.POD_CREATION_ERRORS.labels(backend, "transient" if error.transient else "refused").inc()
                if error.transient:
                    raise
                result.failed += fail_task(
                    task, TaskStatus.FAILED_BACKEND_ERROR, str(error), kind="BACKEND_ERROR", from_statuses=(PENDING,)
                )
                continue
            if _record_created(task, outcome):
                if outcome.created:
                    result.created += 1
                else:
                    result.adopted += 1
    finally:
        kube.close()
        settle(workflow.pk)
        _count(workflow.workflow_id, backend, result)
    return result


def _write_secrets(kube, workflow: Workflow, tasks: list[Task]) -> str:
    """Write the workflow's credential Secrets (workflows.credentials) in its tasks' namespaces, before their
    pods; "" when done, else why not (a credential deleted since the submission, a Secret the API refused).
    Transient errors propagate, for Celery to retry."""
    if not workflow.credential_secrets:
        return ""
    try:
        manifests = credentials.manifests(workflow, _owned_by(tasks))
        for namespace in sorted({task.namespace for task in tasks}):
            for secret in manifests:
                secrets.apply_secret(kube, namespace, secret)
    except KubeError as error:
        if error.transient:
            raise
        return str(error)
    except DomainError as error:  # a credential deleted since the submission, or its values unreadable
        return str(error)
    return ""


def _write_services(kube, workflow: Workflow, tasks: list[Task]) -> str:
    """Write the headless Service of each group of two or more tasks among `tasks` (workflows.group_dns) in its
    namespace, before the pods; "" when done, else the API's refusal. Transient errors propagate."""
    wanted = sorted({(task.namespace, task.group_name) for task in tasks if group_dns.GROUP_LABEL in _labels(task)})
    if not wanted:  # only a group of two or more tasks has pods labelled with it (group_dns.decorate)
        return ""
    labels = _owned_by(tasks)
    try:
        for namespace, group in wanted:
            manifest = group_dns.manifest(str(workflow.uuid), group, labels)
            services.apply_service(kube, namespace, manifest)
    except KubeError as error:
        if error.transient:
            raise
        return str(error)
    return ""


def _labels(task: Task) -> dict:
    return task.pod.get("metadata", {}).get("labels") or {}


def _owned_by(tasks: list[Task]) -> dict[str, str]:
    """The ownership labels of what is written beside a workflow's pods (Secrets, Services), as its pods carry."""
    labels = {
        pods.WORKFLOW_LABEL: _labels(tasks[0]).get(pods.WORKFLOW_LABEL, ""),
        pods.INSTANCE_LABEL: instance(),
        **pods.MANAGED_BY,
    }
    return {key: value for key, value in labels.items() if value}


def _count(workflow_id: str, backend: str, result: CreateResult) -> None:
    """The metrics, and one line a request's id ties to its submission (docs/operations.md), naming the
    workflow by the id its user sees (`hello-1`)."""
    log.info(
        "workflow %s on %s: %d pod(s) created, %d adopted, %d failed",
        workflow_id,
        backend,
        result.created,
        result.adopted,
        result.failed,
    )
    for outcome in ("created", "adopted", "failed"):
        if getattr(result, outcome):
            metrics.POD_CREATIONS.labels(backend, outcome).inc(getattr(result, outcome))


def _record_created(task: Task, outcome: pods.Created) -> bool:
    state = pods.pod_state(outcome.pod, container_of(task))
    created_name = task.pod_name
    with transaction.atomic():
        alive = lock(task)
        if not alive or task.pod_name != created_name:
            # cancelled (or failed, or rescheduled) while we were creating it: the pod is not wanted
            delete_later(backend_of(task), [(task.namespace, created_name)], "not wanted any more")
            return False
        if not transition(task, (PENDING,), status=WAITING, pod_uid=state.uid, pod_created_at=timezone.now(), error=""):
            return False  # another worker recorded it first
        where = f"{task.namespace}/{task.pod_name}"
        record_event(
            task,
            "CREATED",
            f"pod {where} created"
            if outcome.created
            else f"pod {where} already existed (created by an earlier attempt): adopted",
            at=happened(task, state.created_at),
        )
    if outcome.created:
        return True
    observe(task, outcome.pod)  # an adopted pod may have moved on already
    return True


def fail_pending(workflow_pk: int, reason: str) -> int:
    """Creating pods kept failing (transient errors, retries exhausted): tasks without a pod fail."""
    tasks = list(Task.objects.select_related("workflow__pool").filter(workflow_id=workflow_pk, status=PENDING))
    return sum(
        fail_task(task, TaskStatus.FAILED_BACKEND_ERROR, reason, kind="BACKEND_ERROR", from_statuses=(PENDING,))
        for task in tasks
    )
