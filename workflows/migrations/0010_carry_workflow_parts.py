"""Carry the workflows charged before parts existed: each is one part, in its (lead's) node pool, with its whole
`requests`, admitted when it was; its tasks are charged to that node pool (docs/admission.md)."""

from django.db import migrations
from django.db.models import OuterRef, Subquery

BATCH = 1000


def carry(apps, schema_editor):
    workflow_model = apps.get_model("workflows", "Workflow")
    task_model = apps.get_model("workflows", "Task")
    part_model = apps.get_model("workflows", "WorkflowPart")
    charged = workflow_model.objects.exclude(node_pool="")
    lead_pool = charged.filter(pk=OuterRef("workflow_id")).values("node_pool")[:1]
    task_model.objects.filter(workflow__in=charged).update(node_pool=Subquery(lead_pool))
    names = {}
    for workflow_id, name in task_model.objects.filter(workflow__in=charged).values_list("workflow_id", "name"):
        names.setdefault(workflow_id, []).append(name)
    rows = charged.values_list("pk", "node_pool", "requests", "status", "admitted_at", "preemptible")
    parts = [
        part_model(
            workflow_id=pk,
            node_pool=node_pool,
            tasks=sorted(names.get(pk, [])),
            requests=requests or {},
            admitted_at=admitted_at if status != "QUEUED" else None,
            preemptible=preemptible,
        )
        for pk, node_pool, requests, status, admitted_at, preemptible in rows.iterator()
    ]
    part_model.objects.bulk_create(parts, batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [("workflows", "0009_workflow_parts")]

    operations = [migrations.RunPython(carry, migrations.RunPython.noop)]
