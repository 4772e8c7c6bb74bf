"""With PROMETHEUS_MULTIPROC_DIR (gunicorn's several workers), /metrics adds up what every process counted.
Each process here is a real interpreter on the test database; the reader scrapes as a worker would."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.security.test_production_settings import run

COUNT = "import django; django.setup(); from portal import metrics; metrics.SUBMISSIONS.labels('p', 'pending').inc()"
SCRAPE = (
    "import django; django.setup(); from portal.ops.collectors import metrics_page; print(metrics_page()[0].decode())"
)


@pytest.mark.django_db
def test_counters_of_several_processes_add_up(tmp_path):
    shared = tmp_path / "prometheus"
    shared.mkdir()
    settings = connection.settings_dict
    env = {
        "DEBUG": "true",
        "DATABASE_URL": f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}",
        "PROMETHEUS_MULTIPROC_DIR": str(shared),
    }
    for _ in range(2):
        assert run(["-c", COUNT], tmp_path, **env).returncode == 0
    scraped = run(["-c", SCRAPE], tmp_path, **env)
    assert scraped.returncode == 0, scraped.stderr
    assert 'portal_workflow_submissions_total{outcome="pending",pool="p"} 2.0' in scraped.stdout
    assert "# TYPE portal_pool_queue_depth gauge" in scraped.stdout  # the database part is there too
