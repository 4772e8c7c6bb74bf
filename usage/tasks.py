"""The usage app's periodic jobs (Celery beat, `CELERY_BEAT_SCHEDULE`): the incremental rollup and retention."""

from __future__ import annotations

from celery import shared_task

from portal.celery import app as _celery_app  # noqa: F401  (the app these tasks bind to: `portal` does not load it)


@shared_task(name="usage.tasks.roll_up")
def roll_up() -> int:
    from usage.services import rollup

    return rollup.roll_up()


@shared_task(name="usage.tasks.prune")
def prune() -> dict[str, int]:
    from usage.services import retention

    return retention.prune()
