from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workflows", "0007_exit_reason_and_canceller"),
    ]

    operations = [
        migrations.AddField(
            model_name="task",
            name="interruptions",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
