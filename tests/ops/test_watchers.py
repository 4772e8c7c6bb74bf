"""The watchers' heartbeats and lag (clusters.heartbeat) against the kubesim emulator: both watchers beat for
the backend they watch, `/metrics` shows the beat's age and the lag, and the probe (`watcher_health`)
passes while the loop beats and fails once it stops (a real stopped watcher, a real interpreter's exit code).

The watchers' loops run in the test's thread (`drain_until`), so the test's transaction sees every write."""

from __future__ import annotations

import re
import time
from io import StringIO

import pytest
from django.core.management import call_command

from clusters.inventory_watch import ClusterWatcher
from clusters.models import Backend, WatcherHeartbeat
from portal.errors import PortalError
from tests.ops.processes import in_another_process
from tests.ops.test_metrics import scrape, value
from tests.polling import PATIENCE, drain_until, wait_until
from tests.workflows.conftest import api, spec
from workflows.models import Workflow
from workflows.watcher import WorkflowWatcher


@pytest.fixture
def workflow_watcher(backend):
    watcher = WorkflowWatcher(["sim"], watch_seconds=30, backoff_max=0.5, heartbeat_seconds=0)
    watcher.start()
    yield watcher
    watcher.stop()


def since(moment: float) -> float:
    return time.monotonic() - moment


def heartbeat(watcher: str) -> WatcherHeartbeat | None:
    return WatcherHeartbeat.objects.filter(watcher=watcher, backend__name="sim").first()


def probe(watcher: str, *args: str) -> str:
    out = StringIO()
    call_command("watcher_health", watcher, *args, stdout=out)
    return out.getvalue()


def test_the_workflow_watcher_beats_and_measures_how_long_events_waited(
    client, workflow_watcher, pool, alice, django_capture_on_commit_callbacks
):
    drain_until(workflow_watcher, lambda: heartbeat("watch_workflows"))  # the first listing, then a beat
    # from now on one beat covers the whole drain below (with a beat between items, the last beat would hold
    # only the last item's wait, which may be shorter than the one measured here)
    workflow_watcher.heartbeat_seconds = 3600
    started = time.monotonic()
    with django_capture_on_commit_callbacks(execute=True):  # the pod is created now (eager)
        response = api(alice).post("/api/pool/batch/workflow", spec("watched"), format="json")
    assert response.status_code == 200, response.json()
    # the watch thread reads the pod's events; nothing applies them until the test drains the queue
    wait_until(lambda: not workflow_watcher.events.empty(), what="an event of the new pod")
    queued_by = time.monotonic()
    scrape(client)  # some work meanwhile: the events wait in the queue
    waited = time.monotonic() - queued_by
    workflow_watcher.beat_now()
    workflow_watcher.process()  # a beat first (the wait before), then every queued item
    workflow_watcher.beat_now()  # the beat that reports the drain
    workflow_watcher.process()
    beat = heartbeat("watch_workflows")
    assert beat.events >= 1 and beat.last_event_at is not None
    assert waited <= beat.lag_seconds <= time.monotonic() - started  # the wait is in it, no more than it could be
    workflow_watcher.heartbeat_seconds = 0  # a beat between items again

    drain_until(workflow_watcher, lambda: Workflow.objects.get(name="watched").status in ("RUNNING", "COMPLETED"))
    last_drained = time.monotonic()  # the drain's last step beat (heartbeat_seconds = 0)
    samples = scrape(client)
    labels = {"watcher": "watch_workflows", "backend": "sim"}
    # ages are bounded by what the test saw pass, not by how fast the machine is (+1: whole-second rounding)
    assert 0 <= value(samples, "portal_watcher_heartbeat_age_seconds", **labels) <= since(last_drained) + 1
    assert value(samples, "portal_watcher_events_total", **labels) >= beat.events
    assert 0 <= value(samples, "portal_watcher_event_age_seconds", **labels) <= since(started) + 1
    assert ("portal_watcher_lag_seconds", tuple(sorted(labels.items()))) in samples
    said = probe("watch_workflows", "--max-age", "3600")
    beat_age = re.search(r"watch_workflows sim: ok, beat (\d+)s ago", said)
    assert beat_age, said
    assert int(beat_age.group(1)) <= since(last_drained) + 1


def test_the_inventory_watcher_beats_too(client, backend, kube_server):
    watcher = ClusterWatcher(["sim"], watch_seconds=30, backoff_max=0.5, heartbeat_seconds=0)
    started = time.monotonic()
    try:
        watcher.start()
        drain_until(watcher, lambda: heartbeat("watch_cluster"))
        kube_server.emulator.patch("nodes", "cpu-node-0", {"spec": {"unschedulable": True}})
        drain_until(watcher, lambda: heartbeat("watch_cluster").events >= 1)
    finally:
        watcher.stop()
    samples = scrape(client)
    age = value(samples, "portal_watcher_heartbeat_age_seconds", watcher="watch_cluster", backend="sim")
    assert 0 <= age <= since(started) + 1  # it beat while the test watched
    assert "watch_cluster sim: ok" in probe("watch_cluster", "sim", "--max-age", "3600")


def test_the_probe_fails_once_the_watcher_stops_beating(workflow_watcher):
    drain_until(workflow_watcher, lambda: heartbeat("watch_workflows"))
    assert "watch_workflows sim: ok" in probe("watch_workflows", "--max-age", "3600")
    workflow_watcher.stop()  # a loop that no longer runs: the row ages
    beat_at = heartbeat("watch_workflows").beat_at
    workflow_watcher.process()  # a stopped watcher does not beat
    assert heartbeat("watch_workflows").beat_at == beat_at

    def stale() -> str:
        try:
            probe("watch_workflows", "--max-age", "0.2")
        except PortalError as error:
            return str(error)
        return ""

    message = wait_until(stale, timeout=PATIENCE, what="a stale heartbeat")
    assert message.startswith("watch_workflows sim: stale (more than 0.2s), beat ")
    with pytest.raises(PortalError, match="watch_workflows other: no heartbeat"):
        probe("watch_workflows", "sim", "other", "--max-age", "30")


@pytest.mark.django_db
def test_the_probe_exits_1_without_a_heartbeat(tmp_path):
    process = in_another_process(["manage.py", "watcher_health", "watch_cluster"], tmp_path)
    assert process.returncode == 1
    assert process.stderr.strip() == "error: watch_cluster: no heartbeat yet"
    bad = in_another_process(["manage.py", "watcher_health", "watch_everything"], tmp_path)
    assert bad.returncode == 2 and "invalid choice: 'watch_everything'" in bad.stderr


def test_a_watcher_forgets_the_rows_of_backends_it_no_longer_watches(backend):
    from django.utils import timezone

    old = Backend.objects.create(name="disconnected")  # no connection: not watched
    WatcherHeartbeat.objects.create(watcher="watch_workflows", backend=old, beat_at=timezone.now())
    WatcherHeartbeat.objects.create(watcher="watch_cluster", backend=old, beat_at=timezone.now())
    watcher = WorkflowWatcher(watch_seconds=30, backoff_max=0.5)
    try:
        watcher.start()
    finally:
        watcher.stop()
    assert set(WatcherHeartbeat.objects.values_list("watcher", "backend__name")) == {
        ("watch_cluster", "disconnected")  # another watcher's row is its own business
    }


def test_without_a_database_only_the_liveness_probe_passes(tmp_path):
    from tests.ops.conftest import closed_port
    from tests.security.test_production_settings import run

    env = {"DEBUG": "true", "DATABASE_URL": f"postgres://postgres:db-pass@127.0.0.1:{closed_port()}/portal"}
    ready = run(["manage.py", "watcher_health", "watch_cluster"], tmp_path, **env)
    assert ready.returncode == 1
    assert ready.stderr.strip() == ("error: database unreachable (OperationalError): the heartbeat cannot be read")
    alive = run(["manage.py", "watcher_health", "watch_cluster", "--ok-without-database"], tmp_path, **env)
    assert alive.returncode == 0, alive.stderr
    assert alive.stdout.strip().endswith("the heartbeat cannot be read; not failing")
