"""`backend test NAME`, `backend sync NAME… | --all`, `backend status`, `backend reencrypt`: clusters from the
command line."""

from __future__ import annotations

from access.services import credentials
from clusters import inventory
from clusters.kube.errors import KubeError
from portal.commands import PortalCommand


class Command(PortalCommand):
    help = "Test a backend's connection, sync its node inventory, or show sync status."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        test = verbs.add_parser("test", help="server version and permissions (list/watch/create…)")
        test.add_argument("name")
        test.add_argument("--format", choices=["table", "json"], default="table")
        sync = verbs.add_parser("sync", help="list nodes and pods now and store the inventory")
        sync.add_argument("names", nargs="*", metavar="NAME")
        sync.add_argument("--all", action="store_true", help="every backend with a connection")
        sync.add_argument("--queue", action="store_true", help="enqueue the Celery task instead of running it")
        verbs.add_parser(
            "reencrypt", help="store every backend's secrets again with the first FIELD_ENCRYPTION_KEYS key"
        )
        status = verbs.add_parser("status", help="connection, sync status, node count, last error")
        status.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_test(self, options):
        report = inventory.check_connection(inventory.get_backend(options["name"]))
        if options["format"] == "json":
            self.emit(report.as_dict())
        else:
            self.stdout.write("\n".join(report.lines()))
        if not report.ok:
            raise KubeError(f"backend {options['name']}: the portal lacks permissions it needs (see above)")

    def do_sync(self, options):
        names = options["names"]
        if not names and not options["all"]:
            raise KubeError("name a backend, or pass --all", field="names")
        backends = [inventory.get_backend(name) for name in names] if names else inventory.connected_backends()
        failed = []
        for backend in backends:
            if options["queue"]:
                from clusters.tasks import sync_backend

                sync_backend.delay(backend.pk)
                self.stdout.write(f"backend {backend.name}: sync queued")
                continue
            try:
                result = inventory.sync_backend(backend.pk)
            except KubeError as error:
                failed.append(backend.name)
                self.stderr.write(f"backend {backend.name}: sync failed: {error}")
                continue
            self.stdout.write(
                f"backend {backend.name}: {result.nodes} nodes ({result.created} new, "
                f"{result.updated} changed, {result.deleted} gone), {result.pods} pods, "
                f"{result.seconds:.2f}s"
            )
        if failed:
            raise KubeError(f"sync failed for {', '.join(failed)}; the inventory of each was left as it was")

    def do_reencrypt(self, options):
        count, unreadable = inventory.reencrypt_secrets()
        self.stdout.write(f"{count} backend(s) re-encrypted")
        written, lost = credentials.reencrypt()  # users' credentials (docs/credentials.md) use the same keys
        self.stdout.write(f"{written} credential(s) re-encrypted")
        unreadable += [f"credential {name}" for name in lost]
        if unreadable:
            raise KubeError(
                f"no configured key opens the secrets of {', '.join(unreadable)}; they were left as they are",
                field="FIELD_ENCRYPTION_KEYS",
            )

    def do_status(self, options):
        rows = inventory.backend_status()
        if options["format"] == "json":
            self.emit({"backends": rows})
            return
        self.stdout.write(
            f"{'NAME':<24} {'CONNECTION':<11} {'STATUS':<9} {'ONLINE':<7} {'NODES':>6}  {'LAST SYNC':<20} LAST ERROR"
        )
        for row in rows:
            synced = row["last_sync_at"][:19].replace("T", " ") if row["last_sync_at"] else "-"
            self.stdout.write(
                f"{row['name']:<24} {row['connection'] or '-':<11} {row['sync_status']:<9} "
                f"{'yes' if row['online'] else 'no':<7} {row['nodes']:>6}  {synced:<20} "
                f"{row['last_error'] or ''}"
            )
