"""The Celery shells: retry transient errors (autoretry with backoff and jitter), give up cleanly otherwise."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from clusters.kube.errors import KubeError
from workflows import tasks as jobs


def fake_task(retries: int, eager: bool = False):
    return SimpleNamespace(request=SimpleNamespace(is_eager=eager, retries=retries), max_retries=8, name="t")


def test_transient_errors_are_retried_until_the_limit():
    given_up = []
    with pytest.raises(jobs.TransientClusterError):
        jobs._retry_or_give_up(fake_task(3), KubeError("HTTP 503", k8s_status=503, transient=True), given_up.append)
    jobs._retry_or_give_up(fake_task(8), KubeError("HTTP 503", k8s_status=503, transient=True), given_up.append)
    assert given_up == ["gave up after 9 attempts: HTTP 503"]


def test_client_errors_and_eager_mode_never_raise():
    given_up = []
    jobs._retry_or_give_up(fake_task(0), KubeError("HTTP 403 Forbidden", k8s_status=403), given_up.append)
    assert given_up == ["HTTP 403 Forbidden"]
    jobs._retry_or_give_up(fake_task(0, eager=True), KubeError("down", transient=True), given_up.append)
    assert given_up == ["HTTP 403 Forbidden"]  # left for the reconciler, nothing raised into the request


def test_retry_options():
    task = jobs.create_pods
    assert (task.acks_late, task.reject_on_worker_lost, task.max_retries) == (True, True, 8)
    assert task.autoretry_for == (jobs.TransientClusterError,) and task.retry_jitter
    assert task.retry_backoff == 1 and task.retry_backoff_max == 300


def test_beat_schedule_expires_before_the_next_run():
    from portal.celery import app

    schedule = app.conf.beat_schedule
    for name, task in (
        ("workflows-reconcile", "reconcile_workflows"),
        ("workflows-timeouts", "enforce_timeouts"),
        ("workflows-reaper", "reap_pods"),
    ):
        entry = schedule[name]
        assert entry["task"] == f"workflows.tasks.{task}"
        assert 0 < entry["options"]["expires"] < entry["schedule"]
