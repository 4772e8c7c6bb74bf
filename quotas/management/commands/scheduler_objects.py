"""`scheduler_objects BACKEND [--apply] [--status] [--format yaml|json]`: the KAI-Scheduler or Kueue objects the
portal writes for a delegating backend (docs/quota-schedulers.md, "Keeping the cluster in step")."""

from __future__ import annotations

from dataclasses import asdict

import yaml

from clusters.inventory import get_backend
from portal.commands import PortalCommand
from quotas.services import delegation
from quotas.services.scheduler_status import scheduler_status


class Command(PortalCommand):
    help = (
        "Print the scheduler objects (KAI Queues; Kueue ResourceFlavors, Cohorts, ClusterQueues, LocalQueues) the "
        "portal writes for a backend whose quota_scheduler is kai or kueue; --apply writes them now and deletes "
        "stale ones."
    )

    def add_arguments(self, parser):
        parser.add_argument("backend", metavar="BACKEND")
        parser.add_argument("--apply", action="store_true", help="write them now (and delete stale ones)")
        parser.add_argument("--status", action="store_true", help="print what the scheduler reports allocated")
        parser.add_argument("--format", choices=["yaml", "json"], default="yaml")

    def handle(self, *args, **options):
        backend = get_backend(options["backend"])
        fmt = options["format"]
        if options["status"]:
            self.emit(asdict(scheduler_status(backend)), fmt)
            return
        if options["apply"]:
            result = delegation.sync_scheduler_objects(backend)
            self.emit(result.as_dict(), fmt)
            return
        objects = delegation.render(backend)
        if not objects:
            self.warn(f"backend {backend.name}: quota_scheduler is {backend.quota_scheduler}: no scheduler objects")
            return
        if fmt == "json":
            self.emit(objects)
        else:
            self.stdout.write(yaml.safe_dump_all(objects, sort_keys=False, allow_unicode=True), ending="")
