"""Backend and Node move to the `clusters` app (issue #10): step 1 of 3, rename their tables.

The rows stay where they are: `ALTER TABLE … RENAME` keeps every row, the primary keys and their
sequences, and the foreign keys that point at the tables (PostgreSQL references tables by identity,
SQLite ≥ 3.26 rewrites the references), so Pool.backend, NodeMembership.node and workflows' rows need
no data copy. Step 2 (clusters 0001) declares the models in their new app without touching the
database; step 3 (pools 0005) points the pools models at them and forgets the old ones, also without
touching the database.

The content types move too (same rows, new app label), so what refers to them (admin log entries,
permissions) keeps pointing at the models; on a fresh database there are none yet.
"""

from django.db import migrations

MOVED = ["backend", "node"]


def content_types_to(app_label: str, other: str):
    def move(apps, schema_editor):
        ContentType = apps.get_model("contenttypes", "ContentType")
        ContentType.objects.using(schema_editor.connection.alias).filter(app_label=other, model__in=MOVED).update(
            app_label=app_label)
    return move


class Migration(migrations.Migration):

    dependencies = [
        ('pools', '0003_encrypted_backend_secrets'),
        ('contenttypes', '0002_remove_content_type_name'),
    ]

    operations = [
        migrations.AlterModelTable(name='backend', table='clusters_backend'),
        migrations.AlterModelTable(name='node', table='clusters_node'),
        migrations.RunPython(content_types_to("clusters", "pools"), content_types_to("pools", "clusters")),
    ]
