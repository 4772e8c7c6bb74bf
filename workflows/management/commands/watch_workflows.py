"""`watch_workflows [BACKEND…]`: follow our pods (list, then watch) and fold their status into tasks, until stopped."""

from __future__ import annotations

import signal
import threading

from portal.commands import LongRunningCommand
from workflows.watcher import WorkflowWatcher


class Command(LongRunningCommand):
    help = ("Follow the pods of workflows (this portal's instance label) on backends (all connected ones by "
            "default) and update tasks and workflows as they change.")

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="*", metavar="BACKEND", help="backends to watch (default: all connected)")
        parser.add_argument("--watch-seconds", type=int, default=300,
                            help="server-side timeout of one watch request; it then resumes")
        parser.add_argument("--periodic", type=int, default=0, metavar="SECONDS",
                            help="also enforce timeouts and reap pods every SECONDS (when no Celery beat runs)")

    def handle(self, *args, **options):
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        watcher = WorkflowWatcher(options["names"] or None, watch_seconds=options["watch_seconds"],
                                  periodic_seconds=options["periodic"] or None)
        try:
            for line in watcher.start():
                self.stdout.write(line)
            if not watcher.backends:
                self.stdout.write("no backend with a connection to watch")
                return
            watcher.run(stop)
        finally:
            watcher.stop()
            skipped = f"; {watcher.dropped} not applied (see the log)" if watcher.dropped else ""
            self.stdout.write(f"stopped after {watcher.applied} events{skipped}")
