"""Logging filters (settings.LOGGING). Kept free of Django and DRF imports: logging is configured before
the apps are loaded."""

from __future__ import annotations

import logging


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
