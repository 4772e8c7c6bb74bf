"""The workflow tables carry no index another one already covers (docs/scale.md, "Submission with a year of
history": each index is one write more per submission, and with a million workflows every one of them is a page
read too). A non-unique btree index is redundant when another index of the table starts with its columns."""

from __future__ import annotations

import re

import pytest
from django.db import connection

TABLES = ("workflows_workflow", "workflows_task", "workflows_workflowpart", "workflows_taskevent")


def indexes(table: str) -> list[tuple[str, bool, tuple[str, ...]]]:
    """(name, unique, columns) of the table's btree indexes, LIKE's pattern-operator copies left out."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        rows = cursor.fetchall()
    found = []
    for name, definition in rows:
        if "pattern_ops" in definition:
            continue
        columns = re.search(r"USING btree \((.*)\)", definition).group(1)
        found.append((name, " UNIQUE " in definition, tuple(c.split()[0].strip('"') for c in columns.split(","))))
    return found


@pytest.mark.parametrize("table", TABLES)
def test_no_index_repeats_the_start_of_another(db, table):
    found = indexes(table)
    assert found, table
    redundant = [
        (name, other)
        for name, unique, columns in found
        if not unique
        for other, _, longer in found
        if other != name and longer[: len(columns)] == columns
    ]
    assert redundant == [], redundant
