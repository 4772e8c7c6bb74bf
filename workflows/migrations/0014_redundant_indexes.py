"""Indexes another index already covers, dropped (each is one write more per submission: docs/scale.md): a foreign
key's own index where a unique constraint or a composite index leads with it, the task status index declared
twice, and `created_at`'s where `workflow_newest_first` (created_at DESC, id DESC) orders and ranges the same.
The state is Django's AlterFields; the database only drops the indexes (Django's own AlterField would also drop
and re-check three foreign keys, a scan of a million rows each on a fleet)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workflows", "0013_list_and_dashboard_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="task",
                    name="status",
                    field=models.CharField(
                        choices=[
                            ("PENDING", "Pending"),
                            ("WAITING", "Waiting"),
                            ("RUNNING", "Running"),
                            ("COMPLETED", "Completed"),
                            ("FAILED", "Failed"),
                            ("FAILED_QUEUE_TIMEOUT", "Failed Queue Timeout"),
                            ("FAILED_EXEC_TIMEOUT", "Failed Exec Timeout"),
                            ("FAILED_BACKEND_ERROR", "Failed Backend Error"),
                            ("FAILED_PREEMPTED", "Failed Preempted"),
                            ("CANCELLED", "Cancelled"),
                        ],
                        default="PENDING",
                        max_length=24,
                    ),
                ),
                migrations.AlterField(
                    model_name="task",
                    name="workflow",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="tasks",
                        to="workflows.workflow",
                    ),
                ),
                migrations.AlterField(
                    model_name="workflow",
                    name="created_at",
                    field=models.DateTimeField(auto_now_add=True),
                ),
                migrations.AlterField(
                    model_name="workflow",
                    name="pool",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="workflows",
                        to="pools.pool",
                    ),
                ),
                migrations.AlterField(
                    model_name="workflow",
                    name="submitted_by",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.PROTECT,
                        related_name="workflows",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                migrations.AlterField(
                    model_name="workflowpart",
                    name="workflow",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="parts",
                        to="workflows.workflow",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "workflows_task_status_9346868c"',
                    'CREATE INDEX IF NOT EXISTS "workflows_task_status_9346868c" ON "workflows_task" ("status")',
                ),
                migrations.RunSQL('DROP INDEX IF EXISTS "workflows_task_status_9346868c_like"', migrations.RunSQL.noop),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "workflows_task_workflow_id_849cbdb2"',
                    'CREATE INDEX IF NOT EXISTS "workflows_task_workflow_id_849cbdb2" ON "workflows_task" ("workflow_id")',
                ),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "workflows_workflow_created_at_d46aca0c"',
                    'CREATE INDEX IF NOT EXISTS "workflows_workflow_created_at_d46aca0c" ON "workflows_workflow" ("created_at")',
                ),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "workflows_workflow_pool_id_47917f65"',
                    'CREATE INDEX IF NOT EXISTS "workflows_workflow_pool_id_47917f65" ON "workflows_workflow" ("pool_id")',
                ),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "workflows_workflow_submitted_by_id_46c9918b"',
                    'CREATE INDEX IF NOT EXISTS "workflows_workflow_submitted_by_id_46c9918b" ON "workflows_workflow" ("submitted_by_id")',
                ),
                migrations.RunSQL(
                    'DROP INDEX IF EXISTS "workflows_workflowpart_workflow_id_8a977c12"',
                    'CREATE INDEX IF NOT EXISTS "workflows_workflowpart_workflow_id_8a977c12" ON "workflows_workflowpart" ("workflow_id")',
                ),
            ],
        ),
    ]
