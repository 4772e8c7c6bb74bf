"""`quota set` and `quota show`: team quotas per node pool from the command line (docs/quotas.md, "Doors").

    manage.py quota set PROJECT NODE_POOL [--gpu N] [--limit-gpu N|none] [--weight-gpu N] [--cpu Q] …
        [--no-lend|--lend] [--format json]
    manage.py quota set --department DEPT NODE_POOL [--gpu N] …
    manage.py quota show NODE_POOL [--format json]
    manage.py quota what-if [--from DATE] [--to DATE] [--set 'PROJECT NODE_POOL gpu=16' …]
        [--capacity 'NODE_POOL gpu=+8' …] [--workload FILE] [--format table|json]

Per resource (gpu, cpu, memory): `--<r>` sets deserved, `--limit-<r>` the limit (`none` removes it),
`--weight-<r>` the over-quota weight. `--no-lend` makes the team never lend its unused deserved in that node
pool (every resource; it stays idle for the team), `--lend` undoes it. Amounts are integers or Kubernetes
quantities (`--cpu 8` is 8 cores, `--memory 64Gi`); what is not given is kept. One NODE_POOL revision per call
(`config history NODE_POOL`).
`what-if` replays the recorded period (default: the last 7 days, at most 31) under today's quotas and under
the changes, side by side with what happened, and says what the change does right now (docs/quotas.md,
"What-if"; quotas.services.what_if), or a synthetic workload (`--workload FILE`: quotas.services.what_if_workload)
over the next 7 days by default. Nothing is written.
Errors print one line and exit 1.
"""

from __future__ import annotations

from configs.errors import ConfigError
from configs.revisions import Actor
from portal.commands import PortalCommand
from portal.errors import DomainError
from portal.numbers import whole_number
from quotas import units
from quotas.config_types import RESOURCES
from quotas.services import node_pool_quotas

# the option that sets each (resource, key), to name it in errors
FLAGS = {
    (resource, key): f"--{resource}" if key == "deserved" else f"--{key}-{resource}"
    for resource in RESOURCES
    for key in ("deserved", "limit", "weight")
}
NO_LIMIT = "none"


class Command(PortalCommand):
    help = "Set a project's or department's quota in a node pool; show a node pool's quotas and fair shares."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        setting = verbs.add_parser("set", help="deserved, limit and weight per resource of one team in one node pool")
        setting.add_argument("names", nargs="+", metavar="PROJECT NODE_POOL")
        setting.add_argument("--department", help="set this department's quota (then name only the NODE_POOL)")
        for resource in RESOURCES:
            example = {"gpu": "8", "cpu": "500m or 8", "memory": "64Gi"}[resource]
            setting.add_argument(FLAGS[resource, "deserved"], dest=f"{resource}_deserved", help=f"deserved ({example})")
            setting.add_argument(FLAGS[resource, "limit"], dest=f"{resource}_limit", help="limit, or none")
            setting.add_argument(FLAGS[resource, "weight"], dest=f"{resource}_weight", help="over-quota weight")
        lending = setting.add_mutually_exclusive_group()
        lending.add_argument(
            "--no-lend",
            dest="lend",
            action="store_false",
            default=None,
            help="never lend its unused deserved to other teams in this node pool (every resource)",
        )
        lending.add_argument("--lend", dest="lend", action="store_true", help="lend its unused deserved again")
        setting.add_argument("--description", default="", help="the revision's description")
        setting.add_argument("--format", choices=["text", "json"], default="text")
        show = verbs.add_parser("show", help="per project and resource: deserved, limit, weight, in use, fair share")
        show.add_argument("node_pool", metavar="NODE_POOL")
        show.add_argument("--format", choices=["table", "json"], default="table")
        trying = verbs.add_parser("what-if", help="replay a recorded period under proposed quotas (nothing is written)")
        trying.add_argument("--from", dest="start", help="the period's start: 2026-11-25 or an ISO time (UTC)")
        trying.add_argument("--to", dest="end", help="its end, excluded (default: now; at most 31 days)")
        trying.add_argument(
            "--set",
            dest="changes",
            action="append",
            default=[],
            help="'PROJECT NODE_POOL gpu=N [limit-gpu=N|none] [weight-gpu=N]', 'PROJECT priority=N' or "
            "'department DEPT NODE_POOL gpu=N …' (repeat)",
        )
        trying.add_argument(
            "--capacity", action="append", default=[], help="'NODE_POOL gpu=+N|-N|N': nodes added or removed (repeat)"
        )
        trying.add_argument(
            "--workload",
            metavar="FILE",
            help="a synthetic workload (JSON or YAML list of jobs: project, node_pool, gpus, submit_offset_s, "
            "duration_s) replayed instead of the record; the period defaults to the next 7 days from now",
        )
        trying.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb'].replace('-', '_')}")(options)

    def do_set(self, options):
        team_kind, team, node_pool = _target(options)
        changes = _changes(options)
        try:
            result = node_pool_quotas.set_team_quota(
                None,
                node_pool,
                team_kind,
                team,
                {**changes, "description": options["description"]},
                replace=False,
                actor=Actor.of(None, "cli"),
            )
        except ConfigError as error:
            raise _in_flags(error) from None
        quotas = node_pool_quotas.team_quotas(node_pool, team_kind, team)
        if options["format"] == "json":
            return self.emit(
                {
                    "node_pool": node_pool,
                    team_kind: team,
                    "quotas": quotas,
                    "revision": result.revision,
                    "changed": result.changed,
                }
            )
        said = "; ".join(f"{r} {_figures(r, quotas[r])}" for r in RESOURCES)
        done = f"revision {result.revision}" if result.changed else "unchanged"
        self.stdout.write(f"{team_kind} {team} in {node_pool}: {said} ({done})")
        return None

    def do_what_if(self, options):
        from quotas import what_if_cli
        from quotas.services import what_if, what_if_workload  # the replay: only this verb needs them

        workload = None if options["workload"] is None else what_if_workload.load_file(options["workload"])
        try:
            start, end = what_if.period(options["start"], options["end"], synthetic=workload is not None)
        except DomainError as error:  # the service's start/end are --from/--to here
            flag = "--from" if error.field == "start" else "--to"
            raise DomainError(error.reason, field=flag, value=error.value) from None
        changes = [*options["changes"], *(f"capacity {text}" for text in options["capacity"])]
        answer = what_if.what_if(start, end, changes, workload=workload)
        if options["format"] == "json":
            return self.emit(answer)
        self.stdout.write(what_if_cli.summary(answer))
        self.stdout.write("")
        headers, rows = what_if_cli.table_rows(answer)
        self.table(headers, rows, right=what_if_cli.RIGHT)
        self.stdout.write("")
        for line in what_if_cli.right_now_lines(answer):
            self.stdout.write(line)
        return None

    def do_show(self, options):
        detail = node_pool_quotas.node_pool_detail(options["node_pool"])
        if options["format"] == "json":
            return self.emit(detail)
        self.stdout.write(node_pool_header(detail))
        self.stdout.write("")
        self.stdout.write(f"{'DEPARTMENT':<20} {'RESOURCE':<8} {'DESERVED':>10} {'LIMIT':>10} {'WEIGHT':>6}  PROJECTS")
        for department in detail["departments"]:
            for resource in RESOURCES:
                q = department["quotas"][resource]
                self.stdout.write(
                    f"{department['name']:<20} {resource:<8} {units.show(resource, q['deserved']):>10} "
                    f"{units.show(resource, q['limit']):>10} {q['weight']:>6}  {', '.join(department['projects'])}"
                )
        self.stdout.write("")
        self.stdout.write(
            f"{'PROJECT':<20} {'DEPARTMENT':<16} {'RESOURCE':<8} {'DESERVED':>10} {'LIMIT':>10} {'WEIGHT':>6} "
            f"{'ALLOCATED':>10} {'QUEUED':>10} {'FAIR SHARE':>10} {'BORROWED':>10}"
        )
        for row in detail["projects"]:
            r = row["resource"]
            self.stdout.write(
                f"{row['project']:<20} {row['department'] or '-':<16} {r:<8} {units.show(r, row['deserved']):>10} "
                f"{units.show(r, row['limit']):>10} {row['weight']:>6} {units.show(r, row['allocated']):>10} "
                f"{units.show(r, row['queued']):>10} {_share(r, row['fair_share']):>10} "
                f"{units.show(r, row['borrowed']):>10}"
            )
        if detail["time_based_fair_share"]:
            self.show_usage_weights(detail["time_based_fair_share"])
        return None

    def show_usage_weights(self, block: dict) -> None:
        """Time-based fair share: each team's weight among its siblings, before and after its usage."""
        self.stdout.write("")
        self.stdout.write(f"time-based fair share: {block['text']}")
        self.stdout.write(
            f"{'TEAM':<20} {'KIND':<10} {'RESOURCE':<8} {'WEIGHT':>6} {'USAGE':>8} {'BEFORE':>8} {'AFTER':>8}"
        )
        for resource, rows in block["weights"].items():
            for row in rows:
                self.stdout.write(
                    f"{row['name']:<20} {row['kind']:<10} {resource:<8} {row['weight']:>6} "
                    f"{row['usage'] * 100:>7.1f}% {row['weight_before']:>8.3f} {row['weight_after']:>8.3f}"
                )


def node_pool_header(detail: dict) -> str:
    """The lines `quota show` and `node-pool show` start with."""
    capacity = ", ".join(
        f"{r} {units.show(r, detail['deserved'][r])} deserved / {units.show(r, detail['capacity'][r])}"
        for r in RESOURCES
    )
    flags = [
        "managed" if detail["managed"] else "unmanaged (admits at once)",
        "over-quota on" if detail["over_quota"] else "over-quota off",
    ]
    if detail["overcommitted"]:
        flags.append(f"OVER-COMMITTED: {', '.join(detail['overcommitted_resources'])}")
    return "\n".join(
        [
            f"node pool {detail['name']} (backend {detail['backend']}): {detail['selector_text']}",
            f"{detail['nodes']} nodes; {capacity}",
            "; ".join(flags),
        ]
    )


def _target(options) -> tuple[str, str, str]:
    names, department = options["names"], options["department"]
    if department:
        if len(names) != 1:
            raise ConfigError(
                "with --department name only the node pool: quota set --department DEPT NODE_POOL",
                field="names",
                value=" ".join(names),
            )
        return "department", department, names[0]
    if len(names) != 2:
        raise ConfigError(
            "name the project and the node pool: quota set PROJECT NODE_POOL (or --department DEPT NODE_POOL)",
            field="names",
            value=" ".join(names),
        )
    return "project", names[0], names[1]


def _changes(options) -> dict[str, dict]:
    changes: dict[str, dict] = {}
    for resource in RESOURCES:
        for key in ("deserved", "limit", "weight"):
            value = options.get(f"{resource}_{key}")
            if value is None:
                continue
            if key == "limit" and value.strip().lower() == NO_LIMIT:
                value = None
            elif key == "weight":
                value = _whole(value)
            changes.setdefault(resource, {})[key] = value
    if options.get("lend") is not None:
        for resource in RESOURCES:
            changes.setdefault(resource, {})["lend"] = options["lend"]
    if not changes:
        raise ConfigError(
            "give at least one of --gpu, --cpu, --memory, --limit-<resource>, --weight-<resource>, --lend or --no-lend",
            field="resource",
        )
    return changes


def _in_flags(error: ConfigError) -> ConfigError:
    """`gpu.limit` is `--limit-gpu` on this command line."""
    resource, _, key = error.field.partition(".")
    flag = FLAGS.get((resource, key))
    if flag is None:
        return error
    return ConfigError(error.reason, field=flag, value=error.value)


def _figures(resource: str, quota: dict) -> str:
    return (
        f"deserved {units.show(resource, quota['deserved'])} limit {units.show(resource, quota['limit'])} "
        f"weight {quota['weight']}{'' if quota['lend'] else ' never lends'}"
    )


def _share(resource: str, share) -> str:
    if isinstance(share, float) and not share.is_integer():
        return f"{share:.2f}" if resource == "gpu" else str(round(share))
    return units.show(resource, int(share))


def _whole(value: str) -> int | str:
    """A weight's text as an int when it is one (any size: the service says which are too large); else the
    text itself, which the service refuses naming it (`²`, `1e30`: not int(), which raises on `²`)."""
    number = whole_number(value, -(2**63), 2**63)
    return value if number is None else number
