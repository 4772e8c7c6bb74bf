"""`pool list` (and `pool preview`, see the engine)."""

from __future__ import annotations

from pools.services import pool_listing
from portal.commands import PortalCommand


class Command(PortalCommand):
    help = "List pools."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        listing = verbs.add_parser("list", help="name, backend, platforms, status, description")
        listing.add_argument("--pool", action="append", dest="pools", default=[])
        listing.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_list(self, options):
        rows = pool_listing.pool_rows(options["pools"] or None)
        if options["format"] == "json":
            self.emit({"pools": rows})
            return
        self.stdout.write(f"{'NAME':<28} {'BACKEND':<22} {'STATUS':<12} {'PLATFORMS':<36} DESCRIPTION")
        for row in rows:
            platforms = ",".join(row["platforms"]) or "-"
            self.stdout.write(f"{row['name']:<28} {row['backend']:<22} {row['status']:<12} {platforms:<36} "
                              f"{row['description']}")
