"""With PROMETHEUS_MULTIPROC_DIR (gunicorn's several workers), /metrics adds up what every process counted.
Each process here is a real interpreter on the test database; the reader scrapes as a worker would."""

from __future__ import annotations

import pytest

from tests.ops.processes import SCRAPE, in_another_process

COUNT = "import django; django.setup(); from portal import metrics; metrics.SUBMISSIONS.labels('p', 'pending').inc()"


@pytest.mark.django_db
def test_counters_of_several_processes_add_up(tmp_path):
    shared = tmp_path / "prometheus"
    shared.mkdir()
    for _ in range(2):
        assert in_another_process(["-c", COUNT], tmp_path, PROMETHEUS_MULTIPROC_DIR=str(shared)).returncode == 0
    scraped = in_another_process(["-c", SCRAPE], tmp_path, PROMETHEUS_MULTIPROC_DIR=str(shared))
    assert scraped.returncode == 0, scraped.stderr
    assert 'portal_workflow_submissions_total{outcome="pending",pool="p"} 2.0' in scraped.stdout
    assert "# TYPE portal_pool_queue_depth gauge" in scraped.stdout  # the database part is there too
