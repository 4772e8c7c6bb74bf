"""`access explain USER POOL`: why a user may or may not use a pool (or do another action on it).

`POOL` may also be a resource `<kind>/<name>` of a model that lists its rows, e.g. `department/research`
(with `--action config:Update`: may the user create projects there, as the department's admin?)."""

from __future__ import annotations

from access import actions, policy
from access.matching import check_action
from access.services import users
from configs.errors import ConfigError
from portal.commands import PortalCommand


class Command(PortalCommand):
    help = "Explain access decisions."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        explain = verbs.add_parser("explain", help="which role and policy allow or deny USER on POOL")
        explain.add_argument("username")
        explain.add_argument("pool", help="a pool name, or a resource such as department/research")
        explain.add_argument("--action", default=policy.POOL_ACTION)
        explain.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, **options):
        if not check_action(options["action"]):
            raise ConfigError("must look like workflow:Create", field="--action", value=options["action"])
        target = options["pool"]
        resource = target if "/" in target else actions.pool(target)
        result = policy.explain(users.get(options["username"]), options["action"], resource)
        if options["format"] == "json":
            extra = {"object_rights": result.object_rights} if result.object_rights else {}
            self.emit({"allowed": result.allowed, "because": result.because, **extra})
            return
        verdict = "ALLOWED" if result.allowed else "DENIED"
        self.stdout.write(f"{verdict}: {result.principal} {result.action} on {result.resource}")
        for line in result.because:
            self.stdout.write(f"  because {line}")
        self.stdout.write(f"  roles: {', '.join(result.roles)}")
        for line in result.object_rights:
            self.stdout.write(f"  object right: {line}")
        if result.listed is not None and result.listed != result.allowed:
            self.stdout.write(
                f"  note: the pool {'is' if result.listed else 'is not'} in this user's pool list "
                "(a Deny only hides a pool within its own role)"
            )
