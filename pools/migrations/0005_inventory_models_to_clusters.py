"""Backend and Node moved to `clusters` (issue #10): step 3 of 3, state only.

The foreign keys already point at the renamed tables (pools 0004), so repointing Pool.backend and
NodeMembership.node at clusters.Backend/clusters.Node, declaring the node<->platform link on Platform
(`Platform.nodes`, through NodeMembership; `node.platforms` stays its reverse) and deleting the old
models change Django's state only: no SQL, no row touched.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('clusters', '0001_initial'),
        ('pools', '0004_inventory_tables_to_clusters'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='pool',
                name='backend',
                field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='pools', to='clusters.backend'),
            ),
            migrations.RemoveField(
                model_name='node',
                name='backend',
            ),
            migrations.RemoveField(
                model_name='node',
                name='platforms',
            ),
            migrations.AlterField(
                model_name='nodemembership',
                name='node',
                field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='clusters.node'),
            ),
            migrations.AddField(
                model_name='platform',
                name='nodes',
                field=models.ManyToManyField(related_name='platforms', through='pools.NodeMembership', to='clusters.node'),
            ),
            migrations.DeleteModel(
                name='Backend',
            ),
            migrations.DeleteModel(
                name='Node',
            ),
        ], database_operations=[]),
    ]
