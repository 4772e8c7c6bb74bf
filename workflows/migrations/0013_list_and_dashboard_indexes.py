# The lists' order with its tie-breaker, and the dashboard's last 24 hours, at a million workflows (docs/scale.md).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workflows", "0012_credential_secrets"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="workflow",
            index=models.Index(fields=["-created_at", "-id"], name="workflow_newest_first"),
        ),
        migrations.AddIndex(
            model_name="workflow",
            index=models.Index(fields=["finished_at"], name="workflow_finished_at"),
        ),
        migrations.AddIndex(
            model_name="workflow",
            index=models.Index(fields=["admitted_at"], name="workflow_admitted_at"),
        ),
    ]
