"""`periodic`: run the Celery beat schedule's jobs in this process, on their intervals, until stopped."""

from __future__ import annotations

import signal
import threading

from portal.commands import LongRunningCommand
from portal.periodic import PeriodicRunner, jobs_from_schedule


class Command(LongRunningCommand):
    help = (
        "Run the periodic jobs (inventory resync, workflow reconciliation, timeouts, reaper) in-process on "
        "their beat intervals, for deployments without Celery beat (the embedded default, `make dev`)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="run every job once and exit")

    def handle(self, *args, **options):
        from portal.celery import app

        jobs = jobs_from_schedule(app.conf.beat_schedule)
        for job in jobs:
            self.stdout.write(f"{job.name}: {job.task} every {job.seconds:g}s")
        runner = PeriodicRunner(jobs)
        if options["once"]:
            runner.run_due()
            return
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: stop.set())
        runner.run(stop)
        self.stdout.write("stopped")
