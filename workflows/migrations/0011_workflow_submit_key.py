from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("workflows", "0010_carry_workflow_parts"),
    ]

    operations = [
        migrations.AddField(
            model_name="workflow",
            name="submit_key",
            field=models.CharField(blank=True, max_length=160, null=True, unique=True),
        ),
    ]
