"""`pool list` and `pool preview`."""

from __future__ import annotations

from pools.services import pool_listing
from portal.commands import PortalCommand


class Command(PortalCommand):
    help = "List pools; preview the Pod a task would get."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        listing = verbs.add_parser("list", help="name, backend, platforms, status, description")
        listing.add_argument("--pool", action="append", dest="pools", default=[])
        listing.add_argument("--format", choices=["table", "json"], default="table")
        show = verbs.add_parser("preview", help="the resolved Pod, where each field came from, and the verdict")
        show.add_argument("pool")
        show.add_argument("--platform", help="defaults to the pool's default platform")
        for key in ("cpu", "gpu", "memory", "storage"):
            show.add_argument(f"--{key}")
        show.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", dest="assignments")
        show.add_argument("--task", default="preview-task")
        show.add_argument("--image", default="ubuntu:24.04")
        show.add_argument("--format", choices=["json", "yaml"], default="json")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_list(self, options):
        rows = pool_listing.pool_rows(options["pools"] or None)
        if options["format"] == "json":
            self.emit({"pools": rows})
            return
        self.table(
            ["NAME", "BACKEND", "STATUS", "PLATFORMS", "DESCRIPTION"],
            [
                [row["name"], row["backend"], row["status"], ",".join(row["platforms"]) or "-", row["description"]]
                for row in rows
            ],
        )

    def do_preview(self, options):
        from pools.services.preview import PreviewRequest, parse_assignments, preview  # the engine: this verb's

        request = PreviewRequest(
            pool=options["pool"],
            platform=options["platform"],
            task=options["task"],
            image=options["image"],
            resources={key: options[key] for key in ("cpu", "gpu", "memory", "storage")},
            variables=parse_assignments(options["assignments"]),
        )
        result = preview(request)
        self.emit(
            {key: result[key] for key in ("pod", "provenance", "warnings", "validation", "pool", "platform")},
            options["format"],
        )
