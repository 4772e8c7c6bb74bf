"""Django for benchmarks: settings loaded once, and a throwaway test database created and dropped around a run."""

from __future__ import annotations

import contextlib
import os

import django


def setup() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    django.setup()


@contextlib.contextmanager
def throwaway_database():
    """A fresh migrated database (`test_<name>`), never the configured one; dropped afterwards."""
    setup()
    from django.db import connection
    from django.test.utils import setup_test_environment, teardown_test_environment

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    # Its own name, so a benchmark never drops the database of a test run going on at the same time.
    # BENCH_DATABASE_NAME lets benchmarks run side by side (one name each).
    name = os.environ.get("BENCH_DATABASE_NAME", "bench_portal")
    connection.settings_dict["TEST"] = {**connection.settings_dict.get("TEST", {}), "NAME": name}
    connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        teardown_test_environment()
