"""The Celery app. Tasks enqueue with `delay_on_commit` so a worker never sees uncommitted rows."""

from __future__ import annotations

import os
from collections.abc import Mapping

from celery import Celery, signals
from django.db import close_old_connections

from portal import broker, gc_tuning, logs, metrics, shared_metrics

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
broker.install()  # redis:// brokers: a transport that reuses its Redis client (portal/broker.py)


class DjangoCelerySettings(Mapping):
    """The `CELERY_*` Django settings as a plain mapping, read once, when Celery loads its configuration.

    Celery looks up about seven settings per enqueued task; through `django.conf.settings` each lookup is
    a chain of attribute accesses on the lazy settings object, a fifth of what enqueueing costs. Change
    Celery settings at run time through `app.conf` (as the tests do), not `override_settings`.
    """

    def __init__(self) -> None:
        self._values: dict | None = None

    def _load(self) -> dict:
        if self._values is None:
            from django.conf import settings

            self._values = {name: getattr(settings, name) for name in dir(settings) if name.startswith("CELERY_")}
        return self._values

    def __getitem__(self, key):
        return self._load()[key]

    def __iter__(self):
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


app = Celery("portal", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object(DjangoCelerySettings(), namespace="CELERY")
app.autodiscover_tasks()  # the beat schedule is CELERY_BEAT_SCHEDULE, in portal/settings.py
logs.connect_celery()  # the request id travels with the tasks a request enqueues (portal/logs.py)
metrics.connect_celery()  # task outcomes (portal/metrics.py)


def _in_worker(task) -> bool:
    """A worker runs `task` (not in-process, inside its caller's request and transaction)."""
    return not getattr(getattr(task, "request", None), "is_eager", False)


def task_started(sender=None, **_) -> None:
    """Around each worker task, what Django does around each request: close a connection that is broken or older
    than `CONN_MAX_AGE`, keep the rest (Celery's own fixup would close every one: CELERY_DB_REUSE_MAX, settings);
    and hold the task's metric counts until it ends (portal.shared_metrics)."""
    if _in_worker(sender):
        close_old_connections()
        shared_metrics.hold()


def task_finished(sender=None, **_) -> None:
    if _in_worker(sender):
        shared_metrics.release()  # before the connection may be closed
        close_old_connections()


signals.task_prerun.connect(task_started, weak=False, dispatch_uid="portal-task-started")
signals.task_postrun.connect(task_finished, weak=False, dispatch_uid="portal-task-finished")
signals.task_postrun.connect(gc_tuning.after_work, weak=False, dispatch_uid="portal-gc-settle")  # portal/gc_tuning.py
