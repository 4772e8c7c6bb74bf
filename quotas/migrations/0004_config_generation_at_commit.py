"""Writes to node pools change the config generation at commit, once per transaction (portal.generation):
0003's statement trigger, which wrote it in the writing statement and so held its row lock until the commit,
is replaced by `enroll`'s. Backwards: the statement trigger again."""

from django.db import migrations

from portal import generation

TABLES = ("quotas_nodepool",)
forwards, _ = generation.enroll(*TABLES)


class Migration(migrations.Migration):
    dependencies = [("quotas", "0003_config_generation")]
    operations = [migrations.RunPython(forwards, generation.restore_statement_triggers(*TABLES))]
