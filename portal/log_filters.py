"""Logging filters (settings.LOGGING). Kept free of Django and DRF imports: logging is configured before
the apps are loaded."""

from __future__ import annotations

import logging
import sys


class ClientErrorsOnOneLine(logging.Filter):
    """A 4xx response is the client's mistake: one line in the log, not a traceback. Django's
    `django.request` and `django.security` loggers attach the exception to 403s, 400s and suspicious
    requests; this drops it. 5xx records keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        status = getattr(record, "status_code", None)
        if isinstance(status, int) and 400 <= status < 500:
            record.exc_info = None
            record.exc_text = None
            record.stack_info = None
        return True


class InProcessTaskInfoLeftOut(logging.Filter):
    """Records below WARNING logged while a task runs in the process that sent it (Celery's eager mode: no
    broker) are left out: a command line's output is its answer, not its tasks' progress lines. Warnings and
    errors pass. Installed on the console handler only where such lines are not wanted (settings.LOGGING:
    LOG_INPROCESS_TASKS); a worker's tasks are not eager and keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING or "celery" not in sys.modules:
            return True
        from celery import current_task  # Celery is loaded once a task runs; not imported for other records

        return not (current_task and current_task.request.is_eager)
