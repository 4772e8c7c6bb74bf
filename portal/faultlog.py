"""Log a recurring fault as a few lines, not one line per failure.

A long-running loop that meets the same fault on every item (a lost database, a bug hit by every event)
would otherwise write the same line thousands of times a minute. `FaultLog` writes one line when a fault
starts (with the traceback, if asked), a reminder while it lasts (at most every `remind` seconds), and one
line with the count when it has been gone for `quiet` seconds (`tick`) or the loop ends (`close`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass


@dataclass
class _Fault:
    message: str
    ended: str  # the line's text when the fault is over
    started: float
    last: float
    reminded: float
    count: int = 0
    recovered: bool = False


class FaultLog:
    def __init__(self, logger: logging.Logger, prefix: str, *, quiet: float = 5.0, remind: float = 300.0) -> None:
        self.logger, self.prefix, self.quiet, self.remind = logger, prefix, quiet, remind
        self._open: dict[str, _Fault] = {}

    def failed(self, key: str, message: str, *, ended: str = "", exc_info: bool = False) -> None:
        """One more failure of kind `key`; logged only when the fault starts (or as a rare reminder).
        `ended`: what the last line says once the fault is over (default: `key` ended)."""
        now = time.monotonic()
        fault = self._open.get(key)
        if fault is None:
            fault = self._open[key] = _Fault(message, ended or f"{key}: ended", started=now, last=now, reminded=now)
            self.logger.warning("%s: %s", self.prefix, message, exc_info=exc_info)
        elif now - fault.reminded >= self.remind:
            fault.reminded = now
            self.logger.warning(
                "%s: still failing after %d attempts in %.0f s: %s",
                self.prefix,
                fault.count + 1,
                now - fault.started,
                message,
            )
        fault.count += 1
        fault.last = now
        fault.recovered = False

    def succeeded(self, key: str) -> None:
        """The work of kind `key` got through; the fault ends once no failure follows for `quiet` seconds."""
        fault = self._open.get(key)
        if fault is not None:
            fault.recovered = True

    def tick(self) -> None:
        now = time.monotonic()
        for key, fault in list(self._open.items()):
            if fault.recovered and now - fault.last >= self.quiet:
                self._end(key)

    def close(self) -> None:
        for key in list(self._open):
            self._end(key)

    def _end(self, key: str) -> None:
        fault = self._open.pop(key)
        text = fault.ended if fault.recovered else f"{key}: still failing when the loop stopped"
        self.logger.warning(
            "%s: %s (%d failure%s in %.1f s)",
            self.prefix,
            text,
            fault.count,
            "" if fault.count == 1 else "s",
            fault.last - fault.started,
        )
