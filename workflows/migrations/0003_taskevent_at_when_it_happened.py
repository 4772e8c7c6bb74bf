"""TaskEvent.at is when the event happened (the cluster's time for what the cluster reports), set by the
code instead of auto_now_add; recorded_at keeps when the portal wrote the row (for older rows: `at`)."""

import django.utils.timezone
from django.db import migrations, models
from django.db.models import F


def recorded_when_it_happened(apps, schema_editor):
    apps.get_model("workflows", "TaskEvent").objects.update(recorded_at=F("at"))


class Migration(migrations.Migration):

    dependencies = [
        ('workflows', '0002_task_ignore_non_lead_status'),
    ]

    operations = [
        migrations.AddField(
            model_name='taskevent',
            name='recorded_at',
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.RunPython(recorded_when_it_happened, migrations.RunPython.noop, elidable=True),
        migrations.AlterField(
            model_name='taskevent',
            name='at',
            field=models.DateTimeField(db_index=True, default=django.utils.timezone.now),
        ),
    ]
