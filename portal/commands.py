"""Base for management commands: domain errors become one clean line on stderr and exit code 1.

Under `call_command` (tests, other code) the error propagates unchanged so callers can inspect it.

One-shot verbs (`pool list`, `config show`, ...) skip Django's system checks: the URL check alone imports
every view, the admin and the API schema generator, most of a CLI call's start-up. `manage.py check`,
`migrate`, the web server and the long-running commands (`LongRunningCommand`) still run them.
"""

from __future__ import annotations

import json
import os
import sys

import yaml
from django.core.management.base import BaseCommand

from portal.errors import PortalError


class PortalCommand(BaseCommand):
    requires_system_checks = []  # see the module docstring

    def run_from_argv(self, argv):
        try:
            super().run_from_argv(argv)
        except PortalError as error:
            sys.stderr.write(f"error: {error}\n")
            sys.exit(1)
        except BrokenPipeError:  # `… | head` closed the pipe: stop quietly, as Unix tools do (no traceback)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # flushing at exit fails otherwise
            sys.exit(141)

    def emit(self, data, fmt: str = "json") -> None:
        if fmt == "yaml":
            self.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), ending="")
        else:
            self.stdout.write(json.dumps(data, indent=2, default=str))

    def warn(self, message: str) -> None:
        self.stderr.write(f"warning: {message}")

    def table(self, headers: list[str], rows: list[list[str]], right: frozenset[str] = frozenset()) -> None:
        """Columns as wide as their widest cell (names are not cut), the last one unpadded; `right` names the
        headers whose column aligns right (numbers)."""
        widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]
        for line in (headers, *rows):
            cells = [
                f"{cell!s:>{width}}" if header in right else f"{cell!s:<{width}}"
                for header, cell, width in zip(headers, line, widths, strict=True)
            ]
            self.stdout.write("  ".join(cells).rstrip())


class LongRunningCommand(PortalCommand):
    """A watcher or server: start-up time does not matter, a configuration mistake should stop it at once."""

    requires_system_checks = "__all__"
