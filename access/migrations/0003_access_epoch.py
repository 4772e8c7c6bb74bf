"""The access epoch row (access.epoch): starts at a random value, so caches never outlive a new database."""

import secrets

from django.db import migrations, models


def create_epoch(apps, schema_editor):
    apps.get_model("access", "AccessEpoch").objects.get_or_create(pk=1, defaults={"value": secrets.randbelow(2**48)})


class Migration(migrations.Migration):

    dependencies = [
        ("access", "0002_builtin_roles"),
    ]

    operations = [
        migrations.CreateModel(
            name="AccessEpoch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("value", models.BigIntegerField()),
            ],
            options={
                "verbose_name": "access epoch",
            },
        ),
        migrations.RunPython(create_epoch, migrations.RunPython.noop),
    ]
