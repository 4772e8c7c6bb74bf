"""`machinepool list [--backend B] [--state S] [--format table|json]`: every machine pool with its status, in
`rosa list machinepools`' columns and the portal's own (state, nodes, capacity and cost now / at max);
`machinepool describe NAME [--format table|json]`: one, with the platforms it serves and what a workload needs to
land there. Both read `pools.services.machine_pool_status` (the figures the admin and the REST API show).
`machinepool export [NAME ...] [--backend B] --format terraform|rosa`: machine pools as the pipelines that
provision ROSA write them (clusters.machinepools.export; an on-demand and a spot pool of one cluster share a
module call); what the format cannot express goes to stderr as warnings.
`machinepool import --terraform FILE [--backend B] [--dry-run]`: create the machine pools of a Terraform file's
calls of the seed's module, through the config store (clusters.machinepools.importing); the module's defaults
and implied taints and labels are said on stderr as notes.
`machinepool platform NAME [--pool POOL] [--platform NAME]`: make (or bring up to date) the pod template
and platform of a machine pool (docs/machine-pool-platforms.md). `machinepool delete NAME`: delete it with the
platform and pod template made for it, as the admin's delete does. One function per subcommand (`do_<verb>`)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import yaml

from clusters.filters import STATES, filter_machine_pools
from clusters.machinepools import export
from clusters.machinepools.figures import MachinePoolStatus
from clusters.machinepools.importing import import_terraform
from clusters.machinepools.pricing import money
from clusters.models import Backend, MachinePool
from configs.errors import ConfigError, ConfigNotFound
from configs.revisions import Actor
from pools.engine.quantity import human
from pools.services import machine_pool_status
from pools.services.machine_pool_platforms import make_platform
from pools.services.machine_pool_removal import delete_machine_pool
from portal.commands import PortalCommand

FORMATS = ("terraform", "rosa")
# `rosa list machinepools`' columns (openshift/rosa, cmd/list/machinepool), then the portal's status
LIST_HEADERS = ["ID", "BACKEND", "AUTOSCALING", "REPLICAS", "INSTANCE TYPE", "LABELS", "TAINTS", "AVAILABILITY ZONES",
                "SUBNETS", "SPOT INSTANCES", "STATE", "NODES", "CAPACITY", "COST/h"]  # fmt: skip
GPU = "nvidia.com/gpu"
# `describe`'s lines for the provider settings beyond zones and subnets (clusters.machinepools.provider_limits)
PLACEMENT_LABELS = {"security_groups": "Security group IDs", "aws_tags": "AWS tags", "requirements": "Requirements",
                    "limits": "Limits", "disruption": "Disruption"}  # fmt: skip


class Command(PortalCommand):
    help = (
        "Machine pools: list them with their status, describe one; export them as Terraform (the seed's ROSA "
        "module) or `rosa create machinepool` lines; import them from Terraform; make the platform of one; delete "
        "one with the platform made for it."
    )

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        listing = verbs.add_parser("list", help="every machine pool: rosa's columns, state, nodes, capacity, cost")
        listing.add_argument("--backend", help="only this backend's machine pools")
        listing.add_argument("--state", help=f"only machine pools in this state ({', '.join(STATES)})")
        listing.add_argument("--format", choices=["table", "json"], default="table")
        describe = verbs.add_parser("describe", help="one machine pool: status, platforms, scheduling info")
        describe.add_argument("name", help="the machine pool")
        describe.add_argument("--format", choices=["table", "json"], default="table")
        exporting = verbs.add_parser("export", help="print machine pools as Terraform or rosa command lines")
        exporting.add_argument("names", nargs="*", metavar="NAME", help="the machine pools (or give --backend)")
        exporting.add_argument("--backend", help="every machine pool of this backend")
        exporting.add_argument("--format", choices=FORMATS, default="terraform")
        importing = verbs.add_parser("import", help="create the machine pools of a Terraform file's module calls")
        importing.add_argument("--terraform", required=True, metavar="FILE", help="a .tf file calling the module")
        importing.add_argument("--backend", help="the backend (default: the one whose ocm_cluster_id is cluster_id)")
        importing.add_argument("--dry-run", action="store_true", help="show what would be written; write nothing")
        importing.add_argument("--format", choices=["text", "json"], default="text")
        platform = verbs.add_parser("platform", help="make the pod template and platform of a machine pool")
        platform.add_argument("name", help="the machine pool")
        platform.add_argument("--pool", help="the pool to hold the platform (default: the backend's only pool)")
        platform.add_argument("--platform", dest="platform_name", help="the platform's name (default: NAME)")
        platform.add_argument("--format", choices=["text", "json"], default="text")
        deleting = verbs.add_parser("delete", help="delete a machine pool with the platform and template made for it")
        deleting.add_argument("name", help="the machine pool")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_list(self, options):
        rows = filter_machine_pools(
            machine_pool_status.all_machine_pools(), {"backend": options["backend"], "state": options["state"]}
        )
        page = machine_pool_status.page(rows)
        if options["format"] == "json":
            self.emit(page.as_dict())
            return
        self.table(LIST_HEADERS, [list_row(status) for status in page.rows])

    def do_describe(self, options):
        found = machine_pool_status.detail(options["name"])
        if options["format"] == "json":
            self.emit(found)
            return
        self.stdout.write(described(found), ending="")

    def do_export(self, options):
        pools = _machine_pools(options["names"], options["backend"])
        if options["format"] == "rosa":
            for pool in pools:
                result = export.rosa(pool.spec(), pool.backend.ocm_cluster_id or pool.backend.name)
                self.stdout.write(result.text, ending="")
            return
        if len(pools) == 1:  # its notes are its own: no name before them
            result = export.terraform(pools[0].spec(), pools[0].backend.ocm_cluster_id)
            notes = [f"{pools[0].name}: {note}" for note in result.notes]
        else:
            result = export.terraform_calls([(pool.spec(), pool.backend.ocm_cluster_id) for pool in pools])
            notes = list(result.notes)
        for note in notes:
            name, _, what = note.partition(": ")
            self.warn(f"{name}: not expressible in terraform: {what}")
        self.stdout.write(result.text, ending="")

    def do_import(self, options):
        path = Path(options["terraform"])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"cannot be read: {error}", field="--terraform", value=str(path)) from None
        result = import_terraform(
            text, path.name, Actor.of(None, "cli"), backend=options["backend"], dry_run=options["dry_run"]
        )
        for note in result.notes:
            self.stderr.write(f"note: {note}")
        if options["format"] == "json":
            self.emit(result.as_dict())
            return
        if result.dry_run:
            self.stdout.write("# dry run: nothing written. These MACHINE_POOL documents would be created:")
            self.emit({row.name: row.document for row in result.pools}, "yaml")
            return
        for row in result.pools:
            self.stdout.write(f"MACHINE_POOL {row.name} created (revision {row.revision}) on backend {row.backend}")

    def do_platform(self, options):
        made = make_platform(
            options["name"], Actor.of(None, "cli"), pool=options["pool"], platform=options["platform_name"]
        )
        if options["format"] == "json":
            self.emit(made.as_dict())
            return
        self.stdout.write(made.said())

    def do_delete(self, options):
        self.stdout.write(delete_machine_pool(options["name"], Actor.of(None, "cli")).said())


def _machine_pools(names: list[str], backend: str | None) -> list[MachinePool]:
    """The named machine pools, or all of `backend`'s, in name order; an unknown name or backend is refused."""
    if not names and not backend:
        raise ConfigError("name the machine pools to export, or give --backend", field="name", value=None)
    pools = MachinePool.objects.select_related("backend").order_by("name")
    if backend:
        if not Backend.objects.filter(name=backend).exists():
            raise ConfigNotFound("unknown backend", field="--backend", value=backend)
        pools = pools.filter(backend__name=backend)
    if names:
        pools = pools.filter(name__in=names)
    found = list(pools)
    missing = [name for name in names if name not in {pool.name for pool in found}]
    if missing:
        where = f" on backend {backend}" if backend else ""
        raise ConfigNotFound(f"unknown machine pool{where}", field="name", value=missing[0])
    if not found:
        raise ConfigNotFound("has no machine pool", field="--backend", value=backend)
    return found


def list_row(status: MachinePoolStatus) -> list[str]:
    spec, shown = status.spec, status.as_dict()
    return [
        status.name,
        status.backend,
        "Yes" if spec.autoscaling else "No",
        status.replicas,
        spec.instance_type,
        ", ".join(f"{key}={value}" for key, value in sorted(spec.labels.items())),
        ", ".join(f"{t.key}={t.value}:{t.effect}" for t in spec.taints),
        ", ".join(spec.availability_zones),
        ", ".join(spec.subnets),
        status.spot_instances,
        status.state,
        f"{status.inventory.ready}/{status.inventory.total}",
        capacity(shown["capacity"]),
        hourly(shown["hourly_cost"]),
    ]


def capacity(figures: dict) -> str:
    """ "gpu 0/3, cpu 0/12, mem 0/48Gi": now/at max, in the one human form of quantities."""
    parts = [("gpu", GPU, figures["gpus"])] if figures["gpus"]["max"] else []
    parts += [("cpu", "cpu", figures["cpu_millicores"]), ("mem", "memory", figures["memory_bytes"])]
    return ", ".join(f"{label} {human(name, r['now'])}/{human(name, r['max'])}" for label, name, r in parts)


def hourly(cost: dict) -> str:
    """ "$0.38/$0.96" now/at max; "≈" before an estimate; "-" when no price is known."""
    if cost["now"] is None:
        return "-"
    approx = "≈" if cost["estimate"] else ""
    return f"{approx}${_cents(cost['now'])}/${_cents(cost['at_max'])}"


def _cents(amount: str) -> str:
    return money(Decimal(amount))


def described(found: dict) -> str:
    """`rosa describe machinepool`'s lines, then the portal's status, the platforms and the scheduling info."""
    scaling = found["autoscaling"]
    replicas = f"{scaling['min_replicas']}-{scaling['max_replicas']}" if scaling else str(found["replicas"])
    nodes, cost = found["nodes"], found["hourly_cost"]
    spot = "No"
    if found["spot"]:
        spot = f"Yes (max ${found['max_price']})" if found["max_price"] else "Yes (on-demand)"
    lines = [
        ("ID", found["name"]),
        ("Backend", found["backend"]),
        ("Provider", f"{found['provider'] or 'none (export only)'}"),
        ("Provider ID", found["provider_id"] or "-"),
        ("Autoscaling", "Yes" if scaling else "No"),
        ("Replicas", replicas),
        ("Instance type", f"{found['instance_type']} ({found['machine']})"),
        ("Labels", ", ".join(f"{k}={v}" for k, v in sorted(found["labels"].items()))),
        ("Taints", ", ".join(f"{t['key']}={t['value']}:{t['effect']}" for t in found["taints"])),
        ("Availability zones", ", ".join(found["placement"].get("availability_zones", []))),
        ("Subnets", ", ".join(found["placement"].get("subnets", []))),
        ("Spot instances", spot),
        ("Disk size", f"{found['disk_size']} GiB"),
        ("State", found["state"]),
        ("Last answer", _answered(found)),
        ("Failed attempts", str(found["attempts"])),
        (
            "Nodes",
            f"{nodes['now']} now ({nodes['ready']} ready), {nodes['min']} to {nodes['max']}; "
            f"provider: {nodes['provider_now']} at the last reconcile",
        ),
        ("Capacity now/max", capacity(found["capacity"])),
        ("Cost per hour now/max", cost["line"]),
        ("Platforms", ", ".join(f"{p['pool']}/{p['platform']}" for p in found["platforms"]) or "none"),
    ]
    other = {k: v for k, v in found["placement"].items() if k not in ("availability_zones", "subnets")}
    lines += [(PLACEMENT_LABELS.get(name, name), _inline(value)) for name, value in other.items()]
    width = max(len(label) for label, _ in lines) + 2
    text = "".join(f"{label + ':':<{width}}{value}".rstrip() + "\n" for label, value in lines)
    scheduling = {"nodeSelector": found["scheduling"]["node_selector"]}
    if found["scheduling"]["tolerations"]:
        scheduling["tolerations"] = found["scheduling"]["tolerations"]
    block = yaml.safe_dump(scheduling, sort_keys=False, allow_unicode=True)
    return text + "Scheduling (a pod spec's fields to land on its nodes):\n" + _indent(block)


def _answered(found: dict) -> str:
    when = f" ({found['last_answer_at']})" if found["last_answer_at"] else ""
    return f"{found['last_answer'] or '-'}{when}"


def _inline(value) -> str:
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, allow_unicode=True).strip()


def _indent(block: str) -> str:
    return "".join(f"  {line}\n" for line in block.splitlines())
