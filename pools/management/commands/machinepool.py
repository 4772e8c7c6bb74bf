"""`machinepool export NAME --format terraform|rosa`: a machine pool as the pipelines that provision ROSA
write it (clusters.machinepools.export); what the format cannot express goes to stderr as warnings.
`machinepool platform NAME [--pool POOL] [--platform NAME]`: make (or bring up to date) the pod template
and platform of a machine pool (docs/machine-pool-platforms.md). `machinepool delete NAME`: delete it with the
platform and pod template made for it, as the admin's delete does. One function per subcommand (`do_<verb>`)."""

from __future__ import annotations

from clusters.machinepools import export
from clusters.models import MachinePool
from configs.errors import ConfigNotFound
from configs.revisions import Actor
from pools.services.machine_pool_platforms import make_platform
from pools.services.machine_pool_removal import delete_machine_pool
from portal.commands import PortalCommand

FORMATS = ("terraform", "rosa")


class Command(PortalCommand):
    help = (
        "Machine pools: export one as Terraform (the seed's ROSA module) or a `rosa create machinepool` line; "
        "make the platform of one; delete one with the platform made for it."
    )

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        exporting = verbs.add_parser("export", help="print the machine pool as Terraform or a rosa command line")
        exporting.add_argument("name")
        exporting.add_argument("--format", choices=FORMATS, default="terraform")
        platform = verbs.add_parser("platform", help="make the pod template and platform of a machine pool")
        platform.add_argument("name", help="the machine pool")
        platform.add_argument("--pool", help="the pool to hold the platform (default: the backend's only pool)")
        platform.add_argument("--platform", dest="platform_name", help="the platform's name (default: NAME)")
        platform.add_argument("--format", choices=["text", "json"], default="text")
        deleting = verbs.add_parser("delete", help="delete a machine pool with the platform and template made for it")
        deleting.add_argument("name", help="the machine pool")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_export(self, options):
        pool = _machine_pool(options["name"])
        cluster_id = pool.backend.ocm_cluster_id
        if options["format"] == "rosa":
            result = export.rosa(pool.spec(), cluster_id or pool.backend.name)
        else:
            result = export.terraform(pool.spec(), cluster_id)
        for note in result.notes:
            self.warn(f"{pool.name}: not expressible in {options['format']}: {note}")
        self.stdout.write(result.text, ending="")

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


def _machine_pool(name: str) -> MachinePool:
    try:
        return MachinePool.objects.select_related("backend").get(name=name)
    except MachinePool.DoesNotExist:
        raise ConfigNotFound("unknown machine pool", field="name", value=name) from None
