"""Writes to platforms and pools change the config generation at commit, once per transaction
(portal.generation): 0008's statement triggers, which wrote it in the writing statement and so held its row
lock until the commit, are replaced by `enroll`'s. Backwards: the statement triggers again."""

from django.db import migrations

from portal import generation

TABLES = ("pools_platform", "pools_pool")
forwards, _ = generation.enroll(*TABLES)


class Migration(migrations.Migration):
    dependencies = [("pools", "0008_config_generation")]
    operations = [migrations.RunPython(forwards, generation.restore_statement_triggers(*TABLES))]
