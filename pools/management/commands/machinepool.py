"""`machinepool export NAME --format terraform|rosa`: a machine pool as the pipelines that provision ROSA
write it (clusters.machinepools.export); what the format cannot express goes to stderr as warnings.
One function per subcommand (`do_<verb>`)."""

from __future__ import annotations

from clusters.machinepools import export
from clusters.models import MachinePool
from configs.errors import ConfigNotFound
from portal.commands import PortalCommand

FORMATS = ("terraform", "rosa")


class Command(PortalCommand):
    help = "Machine pools: export one as Terraform (the seed's ROSA module) or a `rosa create machinepool` line."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        exporting = verbs.add_parser("export", help="print the machine pool as Terraform or a rosa command line")
        exporting.add_argument("name")
        exporting.add_argument("--format", choices=FORMATS, default="terraform")

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


def _machine_pool(name: str) -> MachinePool:
    try:
        return MachinePool.objects.select_related("backend").get(name=name)
    except MachinePool.DoesNotExist:
        raise ConfigNotFound("unknown machine pool", field="name", value=name) from None
