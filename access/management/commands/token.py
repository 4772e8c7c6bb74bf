"""`token create|list|revoke`: personal API tokens from the command line."""

from __future__ import annotations

from access.services import audit, tokens, users
from portal.commands import PortalCommand


class Command(PortalCommand):
    help = "Create, list and revoke a user's API tokens (the secret is printed once)."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        create = verbs.add_parser("create", help="create a token; prints the secret once")
        create.add_argument("username")
        create.add_argument("name")
        create.add_argument("--roles", default=None, help="comma-separated subset of the user's roles (default: all)")
        create.add_argument("--expires", default=None, help="YYYY-MM-DD, ISO date-time or e.g. 30d (default: maximum)")
        create.add_argument("--format", choices=["text", "json"], default="text")
        listing = verbs.add_parser("list", help="a user's tokens (never the secrets)")
        listing.add_argument("username")
        listing.add_argument("--format", choices=["table", "json"], default="table")
        revoke = verbs.add_parser("revoke", help="revoke a token now")
        revoke.add_argument("username")
        revoke.add_argument("name")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_create(self, options):
        roles = None if options["roles"] is None else [r for r in options["roles"].split(",") if r.strip()]
        created = tokens.create(
            users.get(options["username"]),
            options["name"],
            roles=roles,
            expires=options["expires"],
            actor=audit.SYSTEM_CLI,
        )
        if options["format"] == "json":
            self.emit(created.as_dict())
            return
        self.stdout.write(created.secret)
        self.warn(
            f"token {created.token.name} expires {created.token.expires_at:%Y-%m-%d %H:%M} UTC; "
            "the secret is shown only now"
        )

    def do_list(self, options):
        rows = [tokens.describe(token) for token in tokens.tokens_of(users.get(options["username"]))]
        if options["format"] == "json":
            self.emit(rows)
            return
        self.stdout.write(f"{'NAME':<24} {'PREFIX':<12} {'STATUS':<8} {'EXPIRES':<17} ROLES")
        for row in rows:
            self.stdout.write(
                f"{row['name']:<24} {row['prefix']:<12} {row['status']:<8} {row['expires'][:16]:<17} "
                f"{', '.join(row['roles']) or '-'}"
            )

    def do_revoke(self, options):
        token = tokens.revoke(users.get(options["username"]), options["name"], actor=audit.SYSTEM_CLI)
        self.stdout.write(f"token {token.name} of {options['username']} revoked")
