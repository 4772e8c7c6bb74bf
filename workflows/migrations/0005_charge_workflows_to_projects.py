"""Charge the workflows stored before `Workflow.project` existed (workflows.project_backfill)."""

from django.conf import settings
from django.db import migrations

from workflows.project_backfill import charge_unassigned


def charge(apps, schema_editor):
    user_model = apps.get_model(settings.AUTH_USER_MODEL)
    charge_unassigned(apps.get_model("workflows", "Workflow"), apps.get_model("teams", "Project"),
                      user_model.groups.through)


class Migration(migrations.Migration):

    dependencies = [
        ("workflows", "0004_workflow_project"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(charge, migrations.RunPython.noop)]
