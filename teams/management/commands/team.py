"""`team create|show|list`: departments and projects from the command line (docs/teams.md).

    manage.py team create department research [--description "..."]
    manage.py team create project vision --department research [--idp-group vision-users] [--format json]
    manage.py team show project vision [--format json]
    manage.py team update vision --priority 5 [--description "..."] [--format json]   # a project (audited)
    manage.py team history vision [--format json]      # the project's creation and changes, newest first
    manage.py team show department research [--format json]
    manage.py team list [projects|departments] [--department research] [--format json]
    manage.py team admins add|remove DEPARTMENT USER [--format json]
    manage.py team admins list DEPARTMENT [--format json]

The operator's view: every department and project. Errors print one line and exit 1.
"""

from __future__ import annotations

from access.services import audit
from portal.commands import PortalCommand
from teams import services
from teams.errors import TeamInvalid

KINDS = ("department", "project")


class Command(PortalCommand):
    help = "Create, show and list departments and projects (teams)."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
        create = verbs.add_parser("create", help="create a department, or a project (and its role osmo-<name>)")
        create.add_argument("kind", choices=KINDS)
        create.add_argument("name")
        create.add_argument("--department", help="the project's department (projects only)")
        create.add_argument("--description", default="")
        create.add_argument(
            "--idp-group",
            action="append",
            default=[],
            dest="idp_groups",
            help="an IdP group that grants the project's role (repeatable; projects only)",
        )
        create.add_argument("--format", choices=["text", "json"], default="text")
        show = verbs.add_parser("show", help="one department or project")
        show.add_argument("kind", choices=KINDS)
        show.add_argument("name")
        show.add_argument("--format", choices=["text", "json"], default="text")
        update = verbs.add_parser("update", help="change a project's priority or description")
        update.add_argument("name", help="the project")
        update.add_argument(
            "--priority",
            help=f"over-quota rank, {services.PRIORITY_MIN}…{services.PRIORITY_MAX} (higher is served first)",
        )
        update.add_argument("--description")
        update.add_argument("--format", choices=["text", "json"], default="text")
        history = verbs.add_parser("history", help="a project's creation and changes, newest first")
        history.add_argument("name", help="the project")
        history.add_argument("--format", choices=["text", "json"], default="text")
        listing = verbs.add_parser("list", help="projects (default) or departments")
        listing.add_argument("kind", nargs="?", choices=["projects", "departments"], default="projects")
        listing.add_argument("--department", help="only this department's projects")
        listing.add_argument("--format", choices=["table", "json"], default="table")
        admins = verbs.add_parser("admins", help="a department's admins: add, remove or list them")
        admins.add_argument("operation", choices=["add", "remove", "list"])
        admins.add_argument("department")
        admins.add_argument("username", nargs="?", help="the user to add or remove")
        admins.add_argument("--format", choices=["text", "json"], default="text")

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb']}")(options)

    def do_create(self, options):
        if options["kind"] == "department":
            department = services.create_department(
                options["name"], audit.SYSTEM_CLI, description=options["description"]
            )
            if options["format"] == "text":
                self.stdout.write(f"department {department.name} created")
                return None
            return self._show_department(department, options["format"])
        if not options["department"]:
            raise TeamInvalid("a project belongs to a department: name it with --department", field="--department")
        created = services.create_project(
            options["name"],
            options["department"],
            audit.SYSTEM_CLI,
            description=options["description"],
            idp_groups=options["idp_groups"],
        )
        project = services.get_project(created.project.name)
        if options["format"] == "text":
            action = "created" if created.role_created else "linked (existing)"
            self.stdout.write(
                f"project {project.name} created in department {project.department.name}; "
                f"role {project.role.name} {action}"
            )
            return None
        return self.emit({**services.describe_project(project, members=True), "role_created": created.role_created})

    def do_show(self, options):
        if options["kind"] == "department":
            return self._show_department(services.get_department(options["name"]), options["format"])
        data = services.describe_project(services.get_project(options["name"]), members=True)
        if options["format"] == "json":
            return self.emit(data)
        for key in ("name", "department", "description", "role", "priority"):
            self.stdout.write(f"{key}: {data[key] if data[key] not in ('', None) else '-'}")
        self.stdout.write(f"idp groups: {', '.join(data['idp_groups'])}")
        self.stdout.write(f"members ({data['member_count']}): {', '.join(data['members']) or '-'}")
        return None

    def do_update(self, options):
        if options["priority"] is None and options["description"] is None:
            raise TeamInvalid("give what to change: --priority N and/or --description TEXT", field="--priority")
        project = services.update_project(
            options["name"], audit.SYSTEM_CLI, priority=options["priority"], description=options["description"]
        )
        data = services.describe_project(services.get_project(project.name))
        if options["format"] == "json":
            return self.emit(data)
        self.stdout.write(f"project {data['name']}: priority {data['priority']}")
        return None

    def do_history(self, options):
        events = services.project_history(options["name"])
        if options["format"] == "json":
            return self.emit({"project": options["name"], "history": events})
        for event in events:
            changes = ", ".join(f"{field} {pair[0]} → {pair[1]}" for field, pair in _changes(event))
            self.stdout.write(
                f"{event['at']:%Y-%m-%d %H:%M:%S} {event['actor']} ({event['source']}) "
                f"{event['action']}{': ' + changes if changes else ''}"
            )
        return None

    def do_list(self, options):
        if options["kind"] == "departments":
            rows = services.describe_departments(services.departments_visible_to(None))
            if options["format"] == "json":
                return self.emit({"departments": rows})
            self.stdout.write(f"{'DEPARTMENT':<24} {'PROJECTS':<40} DESCRIPTION")
            for row in rows:
                self.stdout.write(f"{row['name']:<24} {', '.join(row['projects']) or '-':<40} {row['description']}")
            return None
        projects = services.projects_visible_to(None)
        if options["department"]:
            projects = projects.filter(department__name=options["department"])
        rows = [services.describe_project(project) for project in projects]
        if options["format"] == "json":
            return self.emit({"projects": rows})
        self.stdout.write(f"{'PROJECT':<24} {'DEPARTMENT':<20} {'ROLE':<28} {'PRIORITY':>8} {'MEMBERS':>7}  IDP GROUPS")
        for row in rows:
            self.stdout.write(
                f"{row['name']:<24} {row['department']:<20} {row['role']:<28} {row['priority']:>8} "
                f"{row['member_count']:>7}  "
                f"{', '.join(row['idp_groups'])}"
            )
        return None

    def do_admins(self, options):
        operation, department, username = options["operation"], options["department"], options["username"]
        if operation == "list":
            names = services.department_admins(department)
        elif not username:
            raise TeamInvalid(f"name the user to {operation}: team admins {operation} {department} USER", field="USER")
        elif operation == "add":
            names = services.add_department_admin(department, username, audit.SYSTEM_CLI)
        else:
            names = services.remove_department_admin(department, username, audit.SYSTEM_CLI)
        if options["format"] == "json":
            return self.emit({"department": department, "admins": names})
        if operation != "list":
            done = "is now" if operation == "add" else "is no longer"
            self.stdout.write(f"{username} {done} an admin of department {department}")
        self.stdout.write(f"admins of department {department}: {', '.join(names) or '-'}")
        return None

    def _show_department(self, department, fmt: str):
        [data] = services.describe_departments([department])
        if fmt == "json":
            return self.emit(data)
        self.stdout.write(f"department {data['name']}: {data['description'] or '-'}")
        self.stdout.write(f"projects: {', '.join(data['projects']) or '-'}")
        return None


def _changes(event: dict) -> list[tuple[str, list]]:
    """The `[before, after]` pairs of a `team.update` event (a creation's detail is not a change)."""
    if event["action"] != "team.update":
        return []
    return [(field, pair) for field, pair in event["changes"].items() if isinstance(pair, list) and len(pair) == 2]
