"""Writes to backends change the config generation (portal.generation), at commit: a submission caches its
pool with the pool's backend (namespace, scheduler, last sync) under it (workflows.pool_loading). Backends
are written on config changes and by the inventory's status updates (a full sync every few minutes)."""

from django.db import migrations

from portal import generation

forwards, backwards = generation.enroll("clusters_backend")


class Migration(migrations.Migration):
    dependencies = [("clusters", "0004_watcher_heartbeat"), ("portal", "0002_config_generation")]
    operations = [migrations.RunPython(forwards, backwards)]
