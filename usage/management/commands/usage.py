"""`usage report`, `usage rollup`, `usage rebuild` and `usage prune`: the usage record from the command line
(docs/usage.md, "Reports").

    manage.py usage report [--from DATE|TIME] [--to DATE|TIME] [--by project,node-pool,…]
        [--granularity total|day|hour] [--project P …] [--department D …] [--pool P …] [--node-pool N …]
        [--format table|json|csv]
    manage.py usage rollup                           the incremental rollup job, now
    manage.py usage rebuild [--from …] [--to …]      recompute the rollups of a range from the raw records
                                                     (hours past the raw retention are kept, not recomputed)
    manage.py usage prune                            retention: delete what is older than it keeps

`report` defaults to the last 30 days, grouped by project, one total per group; a date as `--to` includes
that day. It is the operator's tool on the server: it shows every team (the REST report filters by viewer).
Errors print one line, naming the option and the value, and exit 1.
"""

from __future__ import annotations

from portal.commands import PortalCommand
from usage.services import consumption, retention, rollup
from usage.services.consumption import FILTERS, cli_label, parse_time
from usage.services.report import GRANULARITIES, GROUPS, ReportError

NUMBERS = frozenset([*consumption.MEASURES, *consumption.GUARANTEE])


class Command(PortalCommand):
    help = "Usage reports (GPU-, CPU-, memory-hours, cost, idle guarantee); run the rollup, rebuild it, prune."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        report = verbs.add_parser("report", help="consumption per project, department, pool, node pool …")
        report.add_argument("--from", dest="start", help="a date (2026-11-01) or ISO time; default 30 days ago")
        report.add_argument("--to", dest="end", help="a date (included) or ISO time; default now")
        report.add_argument(
            "--by", action="append", default=[], help=f"group by one or more of {', '.join(GROUPS)} (comma-separated)"
        )
        report.add_argument("--granularity", default="total", help=f"one of {', '.join(GRANULARITIES)}")
        for name in FILTERS:
            report.add_argument(f"--{name}", dest=name, action="append", default=[], help=f"only this {name}")
        report.add_argument("--format", choices=["table", "json", "csv"], default="table")
        verbs.add_parser("rollup", help="bring the hourly and daily rollups up to date now")
        rebuild = verbs.add_parser("rebuild", help="recompute the rollups of a range from the raw records")
        rebuild.add_argument("--from", dest="start", help="a date or ISO time; default the oldest record")
        rebuild.add_argument("--to", dest="end", help="a date (included) or ISO time; default the newest record")
        verbs.add_parser("prune", help="delete raw records and rollups older than their retention")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_report(self, options):
        query = consumption.parse(
            start=options["start"],
            end=options["end"],
            by=options["by"],
            granularity=options["granularity"],
            filters={name: options[name] for name in FILTERS},
        )
        result = consumption.report(query)
        if options["format"] == "json":
            return self.emit(_document(result))
        if options["format"] == "csv":
            return self.stdout.write(consumption.as_csv(result.columns, result.rows), ending="")
        self.stdout.write(
            f"usage from {query.start:%Y-%m-%d %H:%M} to {query.end:%Y-%m-%d %H:%M} UTC, "
            f"by {', '.join(query.by)}, {query.granularity}"
        )
        if note := consumption.coverage_note(result.guarantee):
            self.stdout.write(note)
        if not result.rows:
            return self.stdout.write("no usage recorded in this period")
        headers = [column.upper() for column in result.columns]
        cells = [[_cell(row.get(column)) for column in result.columns] for row in result.rows]
        self.table(headers, cells, right=frozenset(name.upper() for name in NUMBERS))
        return None

    def do_rollup(self, options):
        hours = rollup.roll_up()
        self.stdout.write(f"{hours} hour(s) rolled up")

    def do_rebuild(self, options):
        start = parse_time(options["start"], "from") if options["start"] else None
        end = parse_time(options["end"], "to", end=True) if options["end"] else None
        if start and end and end <= start:
            raise ReportError("--to must come after --from", field=cli_label("to"), value=options["end"])
        hours = rollup.rebuild(start, end)
        self.stdout.write(f"{hours} hourly rollup row(s) rebuilt")
        horizon = rollup.raw_horizon()
        if start is None or start < horizon:
            self.stdout.write(
                f"hours before {horizon:%Y-%m-%d %H:%M} UTC are past the raw records' retention: "
                "kept as rolled up (with what attempts not rolled up yet add), not recomputed"
            )

    def do_prune(self, options):
        removed = retention.prune()
        self.stdout.write("deleted " + ", ".join(f"{count} {what}" for what, count in removed.items()))


def _document(result) -> dict:
    query = result.query
    return {
        "from": query.start.isoformat(),
        "to": query.end.isoformat(),
        "by": list(query.by),
        "granularity": query.granularity,
        "columns": result.columns,
        "rows": result.rows,
        **consumption.coverage_fields(result),
    }


def _cell(value) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)
