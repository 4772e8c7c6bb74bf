"""`devserver [--port 8000] [--kubesim-port 8001]`: the embedded default in one supervised process (`make dev`)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError

from portal import devserver
from portal.commands import LongRunningCommand
from portal.numbers import checked_int


class Command(LongRunningCommand):
    help = (
        "Run the simulated clusters (one per demo backend), the web server, both watchers and the periodic jobs "
        "together; restart any that crashes; stop them all on Ctrl-C. Logs go to the var folder (PORTAL_VAR_DIR)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", default=os.environ.get("PORT") or "8000", help="1-65535 (8000)")
        parser.add_argument("--kubesim-port", default=os.environ.get("KUBESIM_PORT") or "8001", help="1-65535 (8001)")

    def handle(self, *args, **options):
        port = checked_int(options["port"], "--port", 1, 65535)  # one line on stderr, exit 1 (PortalCommand)
        kubesim_port = checked_int(options["kubesim_port"], "--kubesim-port", 1, 65535)
        try:
            devserver.check_ports({"web server": port, "simulated clusters": kubesim_port})
        except devserver.PortInUse as error:
            raise CommandError(
                f"{error}: stop what uses it (another `make dev`?) or choose other ports, "
                f"e.g. make dev PORT={port + 10000} KUBESIM_PORT={kubesim_port + 10000}"
            ) from None
        var_dir = Path(settings.VAR_DIR).resolve()
        var_dir.mkdir(parents=True, exist_ok=True)
        manage = str(Path(settings.BASE_DIR) / "manage.py")
        supervisor = devserver.Supervisor(
            devserver.children(sys.executable, manage, var_dir, port, kubesim_port),
            devserver.environment(dict(os.environ)),
            var_dir,
            console=self.stdout._out,
        )
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: supervisor.stopping.set())
        try:
            code = devserver.serve(supervisor, port, kubesim_port)
        finally:
            supervisor.say("stopping…")
            supervisor.stop_all()
            supervisor.say("stopped")
        if code:
            sys.exit(code)
