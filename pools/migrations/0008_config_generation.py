"""Writes to platforms and pools change the config generation (portal.generation): membership caches the
platforms of a backend under it (pools.services.membership.backend_targets)."""

from django.db import migrations

from portal import generation

forwards, backwards = generation.enroll("pools_platform", "pools_pool")


class Migration(migrations.Migration):
    dependencies = [("pools", "0007_user_profile"), ("portal", "0002_config_generation")]
    operations = [migrations.RunPython(forwards, backwards)]
