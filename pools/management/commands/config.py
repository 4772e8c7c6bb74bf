"""`config update|show|delete|history|diff|rollback`, mirroring OSMO's CLI verbs."""

from __future__ import annotations

from access.services import roles
from configs import revisions, store
from configs.errors import ConfigError
from configs.models import ConfigType
from configs.revisions import Actor
from portal.commands import PortalCommand
from portal.docfiles import load_document
from portal.numbers import MAX_INT, MAX_PAGE, checked_int

TYPES = ConfigType.values


class Command(PortalCommand):
    help = "Create, show, delete and version configuration objects (OSMO JSON shapes)."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        update = verbs.add_parser("update", help="create or replace objects from a JSON/YAML file")
        update.add_argument("type", type=str.upper, choices=TYPES, metavar="TYPE")
        update.add_argument("name", nargs="?", help="without NAME the file is a {name: body} map")
        update.add_argument("--file", "-f", required=True)
        _describe(update)
        show = verbs.add_parser("show", help="print objects as JSON (the shape update reads)")
        show.add_argument("type", type=str.upper, choices=TYPES, metavar="TYPE")
        show.add_argument("name", nargs="?")
        show.add_argument("--format", choices=["json", "yaml"], default="json")
        delete = verbs.add_parser("delete", help="delete one object (refused while referenced)")
        delete.add_argument("type", type=str.upper, choices=TYPES, metavar="TYPE")
        delete.add_argument("name")
        _describe(delete)
        history = verbs.add_parser("history", help="list revisions, newest first")
        history.add_argument("type", nargs="?", type=str.upper, choices=TYPES, metavar="TYPE")
        history.add_argument("name", nargs="?")
        history.add_argument("--limit", default=50, help="1-1000 (50)")
        history.add_argument("--format", choices=["table", "json"], default="table")
        diff = verbs.add_parser("diff", help="what changed between two revisions")
        diff.add_argument("type", type=str.upper, choices=TYPES, metavar="TYPE")
        diff.add_argument("name")
        diff.add_argument("first")
        diff.add_argument("second")
        diff.add_argument("--format", choices=["text", "json"], default="text")
        rollback = verbs.add_parser("rollback", help="restore an object to a revision (as a new revision)")
        rollback.add_argument("type", type=str.upper, choices=TYPES, metavar="TYPE")
        rollback.add_argument("name")
        rollback.add_argument("revision")
        _describe(rollback)
        # --- ROLE generator (access app) ---
        setter = verbs.add_parser(
            "set",
            help="`set ROLE osmo-<prefix> pool`: generate OSMO's pool role; `set ROLE NAME --file F`: same as update",
        )
        setter.add_argument("type", type=str.upper, choices=[ConfigType.ROLE], metavar="TYPE")
        setter.add_argument("name")
        setter.add_argument("kind", nargs="?", choices=["pool"], help="pool: grants workflow:* on pool/<prefix>*")
        setter.add_argument("--file", "-f")
        _describe(setter)

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_update(self, options):
        document = load_document(options["file"])
        actor, described = Actor.of(None, "cli"), _described(options)
        if options["name"]:
            body = store.unwrap(options["type"], options["name"], document)
            results = [store.apply(options["type"], options["name"], body, actor, **described)]
        else:
            results = store.apply_many(options["type"], document, actor, **described)
        for result in results:
            for warning in result.warnings:
                self.warn(f"{result.name}: {warning}")
            state = "created" if result.created else ("updated" if result.changed else "unchanged")
            revision = f" (revision {result.revision})" if result.revision else ""
            self.stdout.write(f"{result.config_type} {result.name} {state}{revision}")

    def do_show(self, options):
        self.emit(store.show(options["type"], options["name"]), options["format"])

    def do_delete(self, options):
        deleted = store.remove(options["type"], options["name"], Actor.of(None, "cli"), **_described(options))
        self.stdout.write(deleted.said())

    def do_history(self, options):
        rows = [
            revisions.revision_summary(r)
            for r in revisions.history(options["type"], options["name"], limit=_page(options["limit"]))
        ]
        if options["format"] == "json":
            self.emit(rows)
            return
        self.stdout.write(f"{'TYPE':<20} {'NAME':<28} {'REV':>4}  {'AUTHOR':<18} {'TIME':<20} DESCRIPTION")
        for row in rows:
            description = ("[deleted] " if row["deleted"] else "") + row["description"]
            self.stdout.write(
                f"{row['config_type']:<20} {row['name']:<28} {row['revision']:>4}  "
                f"{row['author']:<18} {row['created_at'][:19]:<20} {description}"
            )

    def do_diff(self, options):
        first, second = (_revision(options, key) for key in ("first", "second"))
        result = revisions.diff(options["type"], options["name"], first, second)
        if options["format"] == "json":
            self.emit(result.as_dict())
        else:
            self.stdout.write(result.unified or "no differences", ending="" if result.unified else "\n")

    def do_rollback(self, options):
        result = store.rollback(
            options["type"],
            options["name"],
            _revision(options, "revision"),
            Actor.of(None, "cli"),
            **_described(options),
        )
        state = f"revision {result.revision}" if result.revision else "already identical, nothing written"
        self.stdout.write(
            f"{result.config_type} {result.name} rolled back to r{options['revision']} ({state})"
            + result.with_restored()
        )

    def do_set(self, options):
        actor, described = Actor.of(None, "cli"), _described(options)
        if options["kind"] == "pool":
            result = roles.set_pool_role(options["name"], actor, **described)
        elif options["file"]:
            body = store.unwrap(options["type"], options["name"], load_document(options["file"]))
            result = store.apply(options["type"], options["name"], body, actor, **described)
        else:
            raise ConfigError("say what to set: `pool` (generated pool role) or --file", field="kind", value=None)
        for warning in result.warnings:
            self.warn(f"{result.name}: {warning}")
        state = "created" if result.created else ("updated" if result.changed else "unchanged")
        revision = f" (revision {result.revision})" if result.revision else ""
        self.stdout.write(f"{result.config_type} {result.name} {state}{revision}")


def _describe(parser) -> None:
    parser.add_argument("--description", default="")
    parser.add_argument("--tags", default="", help="comma-separated")


def _described(options) -> dict:
    return {"description": options["description"], "tags": [t.strip() for t in options["tags"].split(",") if t.strip()]}


def _page(limit: object) -> int:
    return checked_int(limit, "--limit", 1, MAX_PAGE)


def _revision(options: dict, key: str) -> int:
    """A revision number given on the command line (named as the usage names it: FIRST, SECOND, REVISION)."""
    return checked_int(options[key], key.upper(), 1, MAX_INT)
