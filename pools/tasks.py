"""The pools app's periodic job (Celery beat, `CELERY_BEAT_SCHEDULE`): the capacity summary the catalog reads."""

from __future__ import annotations

from celery import shared_task

from portal.celery import app as _celery_app  # noqa: F401  (the app these tasks bind to: `portal` does not load it)


@shared_task(name="pools.tasks.summarize_capacity")
def summarize_capacity() -> int:
    from pools.services import capacity_summary

    return capacity_summary.refresh()
