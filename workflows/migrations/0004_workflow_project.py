"""The project a workflow is charged to."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('teams', '0001_initial'),
        ('workflows', '0003_taskevent_at_when_it_happened'),
    ]

    operations = [
        migrations.AddField(
            model_name='workflow',
            name='project',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='workflows', to='teams.project'),
        ),
    ]
