"""Backend and Node, moved here from `pools` (issue #10): step 2 of 3, state only.

Their tables were renamed to clusters_backend and clusters_node by pools 0004 (rows, keys and foreign
keys kept), so this migration only tells Django that the models now live here; it runs no SQL. Pools
0005 then points Pool.backend and NodeMembership.node at these models and forgets its own copies.
"""

import django.db.models.deletion
import django.utils.timezone
import portal.secrets
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('pools', '0004_inventory_tables_to_clusters'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.CreateModel(
                name='Backend',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=128, unique=True)),
                    ('description', models.TextField(blank=True, default='')),
                    ('namespace', models.CharField(default='default', help_text='Namespace for workload pods.', max_length=63)),
                    ('scheduler_name', models.CharField(blank=True, default='', help_text='Pod schedulerName; empty uses the cluster default.', max_length=253)),
                    ('dashboard_url', models.URLField(blank=True, default='')),
                    ('grafana_url', models.URLField(blank=True, default='')),
                    ('connection', models.CharField(blank=True, choices=[('', 'not connected'), ('kubeconfig', 'kubeconfig'), ('in-cluster', 'in-cluster service account'), ('url', 'API URL (+ token, CA)')], default='', max_length=16)),
                    ('api_url', models.CharField(blank=True, default='', help_text='e.g. https://api.example:6443', max_length=2048)),
                    ('token', portal.secrets.EncryptedTextField(blank=True, default='', help_text='Bearer token (secret, stored encrypted).')),
                    ('ca_cert', models.TextField(blank=True, default='', help_text='PEM CA bundle; empty uses the system CAs.')),
                    ('verify_tls', models.BooleanField(default=True)),
                    ('kubeconfig', portal.secrets.EncryptedTextField(blank=True, default='', help_text='kubeconfig content (secret, stored encrypted).')),
                    ('kube_context', models.CharField(blank=True, default='', help_text='kubeconfig context.', max_length=253)),
                    ('sync_status', models.CharField(choices=[('never', 'never synced'), ('ok', 'ok'), ('degraded', 'degraded')], default='never', max_length=16)),
                    ('online', models.BooleanField(default=False)),
                    ('last_sync_at', models.DateTimeField(blank=True, help_text='Last successful full sync.', null=True)),
                    ('last_error', models.TextField(blank=True, default='')),
                    ('last_error_at', models.DateTimeField(blank=True, null=True)),
                    ('server_version', models.CharField(blank=True, default='', max_length=64)),
                    ('created_at', models.DateTimeField(auto_now_add=True)),
                    ('updated_at', models.DateTimeField(auto_now=True)),
                ],
                options={
                    'ordering': ['name'],
                },
            ),
            migrations.CreateModel(
                name='Node',
                fields=[
                    ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                    ('name', models.CharField(max_length=253)),
                    ('labels', models.JSONField(blank=True, default=dict)),
                    ('taints', models.JSONField(blank=True, default=list)),
                    ('allocatable', models.JSONField(blank=True, default=dict, help_text='status.allocatable as reported')),
                    ('capacity', models.JSONField(blank=True, default=dict, help_text='status.capacity as reported')),
                    ('conditions', models.JSONField(blank=True, default=list)),
                    ('unschedulable', models.BooleanField(default=False, help_text='cordoned (spec.unschedulable)')),
                    ('ready', models.BooleanField(default=False)),
                    ('gpu_product', models.CharField(blank=True, db_index=True, default='', max_length=128)),
                    ('requested_workload', models.JSONField(blank=True, default=dict)),
                    ('requested_other', models.JSONField(blank=True, default=dict)),
                    ('workload_pods', models.PositiveIntegerField(default=0)),
                    ('other_pods', models.PositiveIntegerField(default=0)),
                    ('cpu_allocatable', models.BigIntegerField(default=0, help_text='millicores')),
                    ('memory_allocatable', models.BigIntegerField(default=0, help_text='bytes')),
                    ('gpu_allocatable', models.BigIntegerField(default=0)),
                    ('storage_allocatable', models.BigIntegerField(default=0, help_text='ephemeral storage, bytes')),
                    ('cpu_used', models.BigIntegerField(default=0, help_text='millicores requested by non-terminal pods')),
                    ('memory_used', models.BigIntegerField(default=0)),
                    ('gpu_used', models.BigIntegerField(default=0)),
                    ('storage_used', models.BigIntegerField(default=0)),
                    ('fingerprint', models.CharField(blank=True, default='', max_length=40)),
                    ('resource_version', models.CharField(blank=True, default='', max_length=32)),
                    ('first_seen', models.DateTimeField(default=django.utils.timezone.now)),
                    ('last_seen', models.DateTimeField(default=django.utils.timezone.now)),
                    ('backend', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='nodes', to='clusters.backend')),
                ],
                options={
                    'ordering': ['backend_id', 'name'],
                    'constraints': [models.UniqueConstraint(fields=('backend', 'name'), name='unique_node_per_backend')],
                },
            ),
        ], database_operations=[]),
    ]
