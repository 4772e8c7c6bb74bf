"""The config generation's table, sequence and trigger function (portal.generation; PostgreSQL only)."""

from django.db import migrations

from portal import generation


class Migration(migrations.Migration):
    initial = True
    dependencies = [("portal", "0001_shared_count")]
    operations = [migrations.RunPython(generation.install, generation.uninstall, elidable=False)]
