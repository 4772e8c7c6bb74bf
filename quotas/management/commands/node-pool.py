"""`node-pool list` and `node-pool show NAME`: node pools with their capacity and quota totals
(docs/quotas.md, "Doors"). Node pools are written through the NODE_POOL config type (`config update
NODE_POOL`); their quotas with `quota set`. Errors print one line and exit 1.

    manage.py node-pool list [--node-pool NAME]… [--format json]
    manage.py node-pool show NAME [--format json]
"""

from __future__ import annotations

from portal.commands import PortalCommand
from quotas import units
from quotas.config_types import RESOURCES
from quotas.filters import NodePoolFilter
from quotas.management.commands.quota import node_pool_header
from quotas.services import node_pool_quotas


class Command(PortalCommand):
    help = "List node pools (capacity, deserved sums, over-committed); show one with its quota tree."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        listing = verbs.add_parser("list", help="name, backend, selector, nodes, deserved / capacity, flags")
        listing.add_argument("--node-pool", action="append", dest="names", default=[], metavar="NAME")
        listing.add_argument("--format", choices=["table", "json"], default="table")
        show = verbs.add_parser("show", help="one node pool: selector, capacity, departments and projects")
        show.add_argument("name", metavar="NAME")
        show.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_list(self, options):
        chosen = NodePoolFilter({"node_pools": options["names"]}, queryset=node_pool_quotas.all_node_pools()).qs
        rows = node_pool_quotas.node_pool_rows(chosen)
        if options["format"] == "json":
            return self.emit({"node_pools": rows})
        headers = [
            "NAME",
            "BACKEND",
            "NODES",
            "GPU",
            "CPU",
            "MEMORY",
            "OVER-QUOTA",
            "MANAGED",
            "COMMITMENT",
            "SELECTOR",
        ]
        lines = []
        for row in rows:
            figures = [f"{units.show(r, row['deserved'][r])}/{units.show(r, row['capacity'][r])}" for r in RESOURCES]
            commitment = f"over: {','.join(row['overcommitted_resources'])}" if row["overcommitted"] else "fits"
            on_off = "on" if row["over_quota"] else "off"
            managed = "yes" if row["managed"] else "no"
            nodes = f"{row['nodes']} EMPTY" if row["empty"] else row["nodes"]
            lines.append(
                [row["name"], row["backend"], nodes, *figures, on_off, managed, commitment, row["selector_text"]]
            )
        self.table(headers, lines, right=frozenset({"NODES", "GPU", "CPU", "MEMORY"}))
        return None

    def do_show(self, options):
        detail = node_pool_quotas.node_pool_detail(options["name"])
        if options["format"] == "json":
            return self.emit({key: value for key, value in detail.items() if key != "projects"})
        self.stdout.write(node_pool_header(detail))
        if detail["description"]:
            self.stdout.write(detail["description"])
        for department in detail["departments"]:
            said = ", ".join(f"{r} {units.show(r, department['quotas'][r]['deserved'])}" for r in RESOURCES)
            self.stdout.write(f"department {department['name']} ({said}): {', '.join(department['projects']) or '-'}")
        return None
