"""`watch_workflows [BACKEND…]`: follow our pods (list, then watch) and fold their status into tasks, until stopped."""

from __future__ import annotations

from clusters.watchloop import WatchCommand
from workflows.watcher import WorkflowWatcher


class Command(WatchCommand):
    help = (
        "Follow the pods of workflows (this portal's instance label) on backends (all connected ones by "
        "default) and update tasks and workflows as they change."
    )
    names_metavar = "BACKEND"
    watch_seconds_help = "server-side timeout of one watch request; it then resumes"

    def watcher(self, options) -> WorkflowWatcher:
        return WorkflowWatcher(
            options["names"] or None,
            watch_seconds=options["watch_seconds"],
            replica=self.replica(options),
        )
