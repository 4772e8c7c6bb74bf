"""`make fleet`'s generator (bench/fleet.py, docs/scale.md) at a tiny scale: the counts its shape asks for, and a
history the portal can read (every row refers to rows that exist, statuses agree, the usage record as
retention leaves it)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count, Max, Min, Sum
from django.utils import timezone

from bench.fleet import generate, shape
from clusters.models import Backend, Node
from pools.models import Platform, Pool
from quotas.models import NodePool, NodePoolMember, Quota
from teams.models import Department, Project
from usage.models import TaskAttempt, UsageRollup, UsageTotal, WorkflowRecord
from workflows.models import FINISHED_WORKFLOW, Task, TaskEvent, Workflow, WorkflowName, WorkflowPart

pytestmark = pytest.mark.django_db(transaction=True)

SCALE = 0.0004  # 400 workflows, 2 backends of 10 nodes


def test_a_tiny_fleet_has_the_shape_it_was_asked_for():
    fleet = shape(SCALE)
    counts = generate(SCALE, log=lambda *_: None)

    assert Backend.objects.filter(name__startswith="fleet-").count() == fleet.backends
    assert Node.objects.count() == fleet.backends * fleet.nodes_per_backend
    assert NodePoolMember.objects.count() == Node.objects.count()  # each node in exactly one node pool
    assert Node.objects.aggregate(gpus=Sum("gpu_allocatable"))["gpus"] > 0
    assert Pool.objects.count() == fleet.pools
    assert Platform.objects.count() == fleet.pools * fleet.platforms_per_pool
    assert NodePool.objects.exclude(selector_kind="default").count() == fleet.node_pools
    assert Department.objects.count() == fleet.departments and Project.objects.count() == fleet.projects
    # every node pool's document names every project: the `quota show` of 500 projects at full scale
    named = Quota.objects.filter(project__isnull=False, resource="gpu").values("node_pool").annotate(n=Count("id"))
    assert {row["n"] for row in named} == {fleet.projects}

    assert Workflow.objects.count() == counts["workflows"] == fleet.workflows
    assert Task.objects.count() == counts["tasks"] and TaskEvent.objects.count() == counts["events"]
    assert WorkflowPart.objects.count() == fleet.workflows
    assert 2 <= counts["tasks"] / fleet.workflows <= 4  # three a workflow on average
    span = Workflow.objects.aggregate(first=Min("created_at"), last=Max("created_at"))
    assert span["last"] - span["first"] > timedelta(days=300)
    # the ids of workflows and tasks continue after the generator (sequences moved past them)
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence('workflows_workflow', 'id'))")
        assert cursor.fetchone()[0] > Workflow.objects.aggregate(m=Max("id"))["m"]
    assert sum(WorkflowName.objects.values_list("last_number", flat=True)) == fleet.workflows

    # statuses agree: finished workflows have finished tasks and a finish time; live ones are the newest
    finished = Workflow.objects.filter(status__in=sorted(FINISHED_WORKFLOW))
    assert finished.count() >= fleet.workflows * 0.9
    assert not finished.filter(finished_at__isnull=True).exists()
    assert not Task.objects.filter(workflow__in=finished, status__in=["PENDING", "WAITING", "RUNNING"]).exists()
    assert not Workflow.objects.exclude(status__in=sorted(FINISHED_WORKFLOW)).filter(finished_at__isnull=False).exists()
    assert not Task.objects.filter(workflow__status="RUNNING").exclude(status="RUNNING").exists()
    assert not Workflow.objects.filter(project__isnull=True).exists()

    # the usage record as retention leaves it: raw attempts and workflow records of 90 days, rollups of the year
    cutoff = timezone.now() - timedelta(days=91)
    assert TaskAttempt.objects.count() == counts["attempts"] > 0
    assert not TaskAttempt.objects.filter(ended_at__lt=cutoff).exists()
    assert not WorkflowRecord.objects.filter(finished_at__lt=cutoff).exists()
    assert TaskAttempt.objects.filter(ended_at__isnull=True).count() == Task.objects.filter(status="RUNNING").count()
    assert UsageRollup.objects.filter(period_start__lt=cutoff).exists()
    hourly = UsageRollup.objects.filter(granularity="hour").aggregate(s=Sum("gpu_seconds"))["s"]
    daily = UsageRollup.objects.filter(granularity="day").aggregate(s=Sum("gpu_seconds"))["s"]
    assert hourly == daily == UsageTotal.objects.aggregate(s=Sum("gpu_seconds"))["s"] > 0
