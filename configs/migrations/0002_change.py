"""Config history by type, as OSMO numbers it (`POOL:7`): one Change per write of a config type.

Existing object revisions each become one change of their type, numbered in the order they were written.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


def one_change_per_existing_revision(apps, schema_editor):
    Change = apps.get_model("configs", "Change")
    Revision = apps.get_model("configs", "Revision")
    numbers: dict[str, int] = {}
    for row in Revision.objects.order_by("created_at", "id").iterator():
        numbers[row.config_type] = numbers.get(row.config_type, 0) + 1
        username, _, source = row.author_name.rpartition(" (")  # "alice (cli)"
        change = Change.objects.create(
            config_type=row.config_type,
            revision=numbers[row.config_type],
            name=row.name,
            author_id=row.author_id,
            username=username or row.author_name,
            source=source.rstrip(")") if username else "",
            description=row.description,
            tags=row.tags,
        )
        Change.objects.filter(pk=change.pk).update(created_at=row.created_at)
        Revision.objects.filter(pk=row.pk).update(change=change)


class Migration(migrations.Migration):
    dependencies = [
        ("configs", "0001_initial"),
        ("pools", "0001_initial"),  # which creates the revision table
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="Change",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "config_type",
                    models.CharField(
                        choices=[
                            ("POOL", "Pool"),
                            ("POD_TEMPLATE", "Pod template"),
                            ("RESOURCE_VALIDATION", "Resource validation"),
                            ("BACKEND", "Backend"),
                            ("ROLE", "Role"),
                        ],
                        max_length=32,
                    ),
                ),
                ("revision", models.PositiveIntegerField()),
                ("name", models.CharField(blank=True, default="", max_length=128)),
                ("username", models.CharField(blank=True, default="", max_length=150)),
                ("source", models.CharField(blank=True, default="", max_length=16)),
                ("description", models.TextField(blank=True, default="")),
                ("tags", models.JSONField(blank=True, default=list)),
                ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                ("deleted_at", models.DateTimeField(blank=True, null=True)),
                ("deleted_by", models.CharField(blank=True, default="", max_length=150)),
                (
                    "author",
                    models.ForeignKey(
                        blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            options={
                "ordering": ["-created_at", "-id"],
            },
        ),
        migrations.AddField(
            model_name="revision",
            name="change",
            field=models.ForeignKey(
                null=True, on_delete=django.db.models.deletion.PROTECT, related_name="revisions", to="configs.change"
            ),
        ),
        migrations.AddConstraint(
            model_name="change",
            constraint=models.UniqueConstraint(fields=("config_type", "revision"), name="unique_change_number"),
        ),
        migrations.RunPython(one_change_per_existing_revision, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="revision",
            name="change",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.PROTECT, related_name="revisions", to="configs.change"
            ),
        ),
    ]
