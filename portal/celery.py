"""The Celery app. Tasks enqueue with `delay_on_commit` so a worker never sees uncommitted rows."""

from __future__ import annotations

import os
from collections.abc import Mapping

from celery import Celery

from portal import broker
from portal.env import env_int

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
app.autodiscover_tasks()

# Periodic full inventory resync (the watcher, `manage.py watch_cluster`, keeps it current in between).
# Each run expires before the next one is due, so a stalled worker never accumulates a backlog.
INVENTORY_RESYNC_SECONDS = env_int("INVENTORY_RESYNC_SECONDS", 300)
RESYNC_EXPIRES = max(1, INVENTORY_RESYNC_SECONDS * 4 // 5)  # also each backend's sync (clusters.tasks)
app.conf.beat_schedule = {
    "inventory-full-resync": {
        "task": "clusters.tasks.sync_all_backends",
        "schedule": INVENTORY_RESYNC_SECONDS,
        "options": {"expires": RESYNC_EXPIRES},
    },
}

# Workflows (workflows/tasks.py): reconciliation of our pods (what the watcher does, in case it is down),
# queue/exec timeouts, and the reaper of pods nobody needs. Same variables and defaults as the
# WORKFLOW_*_SECONDS settings; read here from the environment because this module is imported before them.
for _name, _task, _variable, _default in (
    ("workflows-reconcile", "workflows.tasks.reconcile_workflows", "WORKFLOW_RECONCILE_SECONDS", 60),
    ("workflows-timeouts", "workflows.tasks.enforce_timeouts", "WORKFLOW_TIMEOUT_CHECK_SECONDS", 30),
    ("workflows-reaper", "workflows.tasks.reap_pods", "WORKFLOW_REAPER_SECONDS", 300),
):
    _seconds = env_int(_variable, _default)
    app.conf.beat_schedule[_name] = {"task": _task, "schedule": _seconds,
                                     "options": {"expires": max(1, _seconds * 4 // 5)}}
