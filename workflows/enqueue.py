"""The one way services queue workflow jobs (`workflows.tasks`) for Celery's workers.

The task module runs the services (lifecycle, reconcile), and the services queue tasks: they call this
module, which loads the task module on the first job queued. That import is deliberately lazy: the task
module loads Celery and the broker client, which a CLI call that queues nothing never needs (README,
"CLI start-up"; tests/integration/test_cli_startup.py).

Jobs queued after commit are robust: a broker that is down is logged, never turned into an error of a
write that is already stored (the reconciler queues PENDING workflows again after
WORKFLOW_PENDING_GRACE_SECONDS).
"""

from __future__ import annotations

from django.db import transaction


def _tasks():
    from workflows import tasks  # lazy on purpose: see the module docstring

    return tasks


def create_pods(workflow_pk: int, *, after_commit: bool = True) -> None:
    """Create the pods of the workflow's PENDING tasks: once the current transaction commits, or now
    (`after_commit=False`: the reconciler, which counts what it queued and lets a broker error show)."""
    if after_commit:
        transaction.on_commit(lambda: _tasks().create_pods.delay(workflow_pk), robust=True)
    else:
        _tasks().create_pods.delay(workflow_pk)


def delete_pods(backend_id: int, targets: list[tuple[str, str]], why: str) -> None:
    """Delete pods `(namespace, name)` of a backend once the current transaction commits (retried by the
    task while the cluster is unreachable)."""
    payload = [[namespace, name] for namespace, name in targets]
    transaction.on_commit(lambda: _tasks().delete_pods.delay(backend_id, payload, why), robust=True)


def delete_secrets(backend_id: int, targets: list[tuple[str, str]], why: str) -> None:
    """Delete Secrets `(namespace, name)` of a backend once the current transaction commits."""
    payload = [[namespace, name] for namespace, name in targets]
    transaction.on_commit(lambda: _tasks().delete_secrets.delay(backend_id, payload, why), robust=True)


def delete_services(backend_id: int, targets: list[tuple[str, str]], why: str) -> None:
    """Delete Services `(namespace, name)` of a backend once the current transaction commits."""
    payload = [[namespace, name] for namespace, name in targets]
    transaction.on_commit(lambda: _tasks().delete_services.delay(backend_id, payload, why), robust=True)
