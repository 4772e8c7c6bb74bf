"""`user create|update|show`: accounts and the roles they hold."""

from __future__ import annotations

from access.services import audit, roles, users
from portal.commands import PortalCommand


def _names(value: str) -> list[str]:
    return [name.strip() for name in (value or "").split(",") if name.strip()]


class Command(PortalCommand):
    help = "Create users, change their roles, show what they hold."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        create = verbs.add_parser("create", help="create a user, optionally with roles")
        create.add_argument("username")
        create.add_argument("--roles", default="", help="comma-separated role names")
        create.add_argument("--email", default="")
        create.add_argument("--password", default=None, help="without it the account has no usable password")
        update = verbs.add_parser("update", help="add or remove roles")
        update.add_argument("username")
        update.add_argument("--add-roles", default="", help="comma-separated role names")
        update.add_argument("--remove-roles", default="", help="comma-separated role names")
        show = verbs.add_parser("show", help="roles and tokens of a user")
        show.add_argument("username")
        show.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_create(self, options):
        user = users.create(
            options["username"],
            email=options["email"],
            password=options["password"],
            role_names=_names(options["roles"]),
            actor=audit.SYSTEM_CLI,
        )
        held = roles.user_role_names(user)
        self.stdout.write(f"user {user.username} created; roles: {', '.join(held) or '(none)'}")

    def do_update(self, options):
        user = users.get(options["username"])
        change = roles.update_user_roles(
            user, add=_names(options["add_roles"]), remove=_names(options["remove_roles"]), actor=audit.SYSTEM_CLI
        )
        self.stdout.write(
            f"user {user.username}: added {', '.join(change.added) or '-'}; removed "
            f"{', '.join(change.removed) or '-'}; roles now: "
            f"{', '.join(roles.user_role_names(user)) or '(none)'}"
        )

    def do_show(self, options):
        data = users.describe(users.get(options["username"]))
        if options["format"] == "json":
            self.emit(data)
            return
        self.stdout.write(f"user:   {data['username']} ({'active' if data['active'] else 'inactive'})")
        self.stdout.write(f"roles:  {', '.join(data['roles']) or '(none)'} (and osmo-default)")
        for token in data["tokens"]:
            self.stdout.write(
                f"token:  {token['name']} {token['status']} until {token['expires'][:16]} "
                f"roles {', '.join(token['roles']) or '-'}"
            )
