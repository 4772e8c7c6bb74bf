"""`resource list [--pool P …] [--platform X …] [--format json|table]`: nodes and capacity, as OSMO's CLI."""

from __future__ import annotations

from pools.services import capacity
from portal.commands import PortalCommand

RESOURCES = ("nvidia.com/gpu", "cpu", "memory", "ephemeral-storage")
HEADERS = {"nvidia.com/gpu": "GPU", "cpu": "CPU", "memory": "MEMORY", "ephemeral-storage": "STORAGE"}


class Command(PortalCommand):
    help = "List nodes of pools with used/allocatable resources, per pool/platform and in total."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        listing = verbs.add_parser("list", help="nodes and capacity (used/allocatable; free in JSON)")
        listing.add_argument("--pool", action="append", dest="pools", default=[], metavar="POOL")
        listing.add_argument("--platform", action="append", dest="platforms", default=[], metavar="PLATFORM")
        listing.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        report = capacity.capacity(options["pools"], options["platforms"])
        if options["format"] == "json":
            self.emit(report.as_dict())
            return
        self._table(report)

    def _table(self, report):
        write = self.stdout.write
        columns = "  ".join(f"{HEADERS[name] + ' used/alloc':<18}" for name in RESOURCES)
        width = max([len(node.name) for node in report.nodes] + [4])
        write(f"{'NODE':<{width}}  {'TYPE':<8}  {'POOLS/PLATFORMS':<40}  {columns}")
        for node in report.nodes:
            where = ", ".join(f"{pool}/{'+'.join(platforms)}" for pool, platforms in node.pools.items())
            write(f"{node.name:<{width}}  {node.resource_type:<8}  {where[:40]:<40}  {self._figures(node)}")
        write("")
        write(f"{'POOL/PLATFORM':<{width + 52}}  {columns}  FREE GPU")
        for name, entry in report.pools.items():
            figures = entry["figures"]
            write(
                f"{name + ' (' + str(figures.nodes) + ' nodes)':<{width + 52}}  {self._figures(figures)}  "
                f"{figures.free['nvidia.com/gpu']}"
            )
            for platform, platform_figures in entry["platforms"].items():
                write(
                    f"{'  ' + platform:<{width + 52}}  {self._figures(platform_figures)}  "
                    f"{platform_figures.free['nvidia.com/gpu']}"
                )
        total = report.total
        write(
            f"{'TOTAL (' + str(total.nodes) + ' nodes, each once)':<{width + 52}}  {self._figures(total)}  "
            f"{total.free['nvidia.com/gpu']}"
        )

    @staticmethod
    def _figures(figures) -> str:
        return "  ".join(f"{capacity.used_of(figures.used, figures.allocatable, name):<18}" for name in RESOURCES)
