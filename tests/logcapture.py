"""What one logger says during a test, whatever earlier tests did to logging.

pytest's caplog listens on the root logger, so it hears nothing when an earlier test in the same process has
disabled the logger or raised the root's level (the Celery test worker, tests/conftest.py, sets the root logger
to ERROR); which tests ran earlier depends on how `make test` spreads files over its workers. A handler on the
logger itself, at a level of its own, hears it either way."""

from __future__ import annotations

import logging


def logger_lines(request, name: str, level: int = logging.WARNING) -> list[str]:
    """The messages `name` logs at `level` and up until the test ends (then the logger is as it was)."""
    logger = logging.getLogger(name)
    lines: list[str] = []
    handler = logging.Handler(level=level)
    handler.emit = lambda record: lines.append(record.getMessage())
    was_disabled, was_level = logger.disabled, logger.level
    logger.disabled = False
    logger.setLevel(level)
    logger.addHandler(handler)

    def restore() -> None:
        logger.removeHandler(handler)
        logger.disabled = was_disabled
        logger.setLevel(was_level)

    request.addfinalizer(restore)
    return lines
