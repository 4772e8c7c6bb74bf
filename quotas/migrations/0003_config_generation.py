"""Writes to node pools change the config generation (portal.generation): node pool membership caches a
backend's node pools under it (quotas.services.membership)."""

from django.db import migrations

from portal import generation

forwards, backwards = generation.enroll("quotas_nodepool")


class Migration(migrations.Migration):
    dependencies = [("quotas", "0002_default_node_pools"), ("portal", "0002_config_generation")]
    operations = [migrations.RunPython(forwards, backwards)]
