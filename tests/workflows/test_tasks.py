"""The Celery shells: retry transient errors (backoff with equal jitter), give up cleanly otherwise."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusters.kube.errors import KubeError
from workflows import tasks as jobs


class RetryAsked(Exception):
    """What Celery's `Task.retry` raises, with what it was asked."""

    def __init__(self, countdown: float, exc: Exception) -> None:
        super().__init__(countdown, exc)
        self.countdown, self.exc = countdown, exc


def fake_task(retries: int, eager: bool = False):
    return SimpleNamespace(
        request=SimpleNamespace(is_eager=eager, retries=retries), max_retries=8, name="t", retry=RetryAsked
    )


def test_transient_errors_are_retried_until_the_limit():
    given_up = []
    with pytest.raises(RetryAsked) as asked:
        jobs._retry_or_give_up(fake_task(3), KubeError("HTTP 503", k8s_status=503, transient=True), given_up.append)
    assert 4 <= asked.value.countdown <= 8 and isinstance(asked.value.exc, jobs.TransientClusterError)
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
    assert not getattr(task, "autoretry_for", ())  # retried by _retry_or_give_up, with its own waits


@settings(max_examples=200)
@given(st.integers(0, 20))
def test_each_wait_is_half_its_nominal_backoff_or_more_and_never_above_it(retries):
    nominal = min(2**retries, 300)
    assert nominal / 2 <= jobs.retry_wait(retries) <= nominal


def test_the_waits_before_giving_up_outlast_a_two_minute_api_outage():
    """Eight retries: whatever the draws, the ninth attempt comes at least 127.5 s after the first (Celery's full
    jitter could put all nine inside one minute, and the soak's 60 s outage failed a workflow)."""
    least = sum(min(2**n, 300) / 2 for n in range(8))
    assert least == 127.5
    assert all(sum(jobs.retry_wait(n) for n in range(8)) >= least for _ in range(1000))


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
