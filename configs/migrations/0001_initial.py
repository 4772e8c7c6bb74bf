"""Revision moves here from pools: the state changes app, the table (`pools_revision`) and its rows stay.

On a new database pools' 0001 creates the table; on an existing one it is already there. Either way this
migration only tells Django the model now belongs to `configs` (pools' 0004 drops it from pools' state).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Revision",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("config_type", models.CharField(choices=[
                            ("POOL", "Pool"), ("POD_TEMPLATE", "Pod template"),
                            ("RESOURCE_VALIDATION", "Resource validation"), ("BACKEND", "Backend"),
                            ("ROLE", "Role")], max_length=32)),
                        ("name", models.CharField(max_length=128)),
                        ("revision", models.PositiveIntegerField()),
                        ("snapshot", models.JSONField(blank=True, null=True)),
                        ("deleted", models.BooleanField(default=False)),
                        ("author_name", models.CharField(blank=True, default="", max_length=150)),
                        ("description", models.TextField(blank=True, default="")),
                        ("tags", models.JSONField(blank=True, default=list)),
                        ("created_at", models.DateTimeField(auto_now_add=True, db_index=True)),
                        ("author", models.ForeignKey(blank=True, null=True,
                                                     on_delete=django.db.models.deletion.SET_NULL,
                                                     to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        "ordering": ["-created_at", "-id"],
                        "db_table": "pools_revision",
                        "indexes": [models.Index(fields=["config_type", "name", "-revision"],
                                                 name="pools_revis_config__5dad4f_idx")],
                        "constraints": [models.UniqueConstraint(fields=("config_type", "name", "revision"),
                                                                name="unique_revision_number")],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
