"""`machinepool platform NAME [--pool POOL] [--platform NAME]`: make (or bring up to date) the pod template
and platform of a machine pool (docs/machine-pool-platforms.md). One function per subcommand."""

from __future__ import annotations

from configs.revisions import Actor
from pools.services.machine_pool_platforms import make_platform
from portal.commands import PortalCommand


class Command(PortalCommand):
    help = "Machine pools: make the platform of one."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        platform = verbs.add_parser("platform", help="make the pod template and platform of a machine pool")
        platform.add_argument("name", help="the machine pool")
        platform.add_argument("--pool", help="the pool to hold the platform (default: the backend's only pool)")
        platform.add_argument("--platform", dest="platform_name", help="the platform's name (default: NAME)")
        platform.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_platform(self, options):
        made = make_platform(
            options["name"], Actor.of(None, "cli"), pool=options["pool"], platform=options["platform_name"]
        )
        if options["format"] == "json":
            self.emit(made.as_dict())
            return
        verb = "created" if made.created else "updated"
        self.stdout.write(
            f"platform {made.pool}/{made.platform} {verb} from machine pool {made.machine_pool} "
            f"(pod template {made.template}, revision {made.template_revision})"
        )
