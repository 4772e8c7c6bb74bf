"""Revision now belongs to the configs app (configs 0001); its table and rows stay where they are."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("pools", "0005_inventory_models_to_clusters"),
        ("configs", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="Revision")],
            database_operations=[],
        ),
    ]
