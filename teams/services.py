"""Departments and projects: create, read, who belongs, and which project a workflow is charged to.

The one use-case layer behind the CLI (`team`), the REST API (`/api/teams/…`) and the admin; it owns the
transactions. Decisions (docs/teams.md):

* Membership is the role: the members of project P are the holders of role `osmo-P` (directly, or through
  their IdP groups at sign-in). Creating a project whose role is missing creates it as OSMO's generated pool
  role (`config set ROLE osmo-P pool`: `workflow:*` on `pool/P*`), through the ROLE config service, so it
  has a revision like any role; an existing role is linked as it is (its policies are never rewritten).
* Rights (`access.policy`, resource `config/team`): `config:Update` creates; `config:Read` sees every
  department and project; everyone else sees the projects they belong to and those projects' departments.
  A department's **admins** (object right `teams.manage_department`, registered in `TeamsConfig.ready`)
  see that department and its projects and create projects in it; appointing them takes a team admin.
* Changing a project (`update_project`: its priority, its description) takes what creating one in its
  department takes; each change is an audit event `team.update` with the values before and after, and
  `project_history` reads a project's events back (CLI `team history`, REST `…/projects/NAME/history`).
* Charging a submission (`charged_project`): the project named in the request (a member's, or anyone's
  for a team admin), else the submitter's only project, else none; several and none named is an error
  listing them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db import IntegrityError, transaction
from django.db.models import Count, QuerySet

from access import actions, policy
from access.documents import BUILTIN_ROLES
from access.epoch import EpochCache
from access.models import AuditEvent
from access.services import audit, object_rights, roles
from configs.validators import check_name
from portal import webhooks
from portal.errors import PermissionDenied
from teams.errors import (
    DepartmentNotFound,
    ProjectChoiceRequired,
    ProjectNotFound,
    TeamExists,
    TeamInvalid,
    UnknownProject,
)
from teams.models import Department, Project, role_name

if TYPE_CHECKING:
    from configs.revisions import Actor

READ, UPDATE = actions.CONFIG_READ, actions.CONFIG_UPDATE
RESOURCE = actions.config("team")
NAME_MAX_LENGTH = Project._meta.get_field("name").max_length
DESCRIPTION_MAX_LENGTH = 2000
# A project's over-quota rank (higher is served first). KAI's queue priority is 100 + this, so it stays 0…200.
PRIORITY_MIN, PRIORITY_MAX = -100, 100
HISTORY_MAX = 200  # the newest events a history shows
_INTEGER = re.compile(r"\s*[+-]?[0-9]{1,4}\s*")  # a CLI's or form's text; longer ones are out of bounds anyway


# --- rights --------------------------------------------------------------------------------------------


def require_team_admin(who, refusal: str = "may not create teams") -> None:
    """A team admin through a role: an object right (a department admin) never passes here."""
    if who is None:
        return
    policy.require(who, UPDATE, RESOURCE, refusal=refusal, field="", value=RESOURCE)


def may_create_projects(who) -> policy.Decision:
    """In some department: a team admin, or an admin of some department (the admin's add button)."""
    return policy.decide(who, UPDATE, RESOURCE, obj=Department)


def may_change_project(who, project: Project) -> bool:
    """A team admin, or an admin of the project's department (the admin's editable priority)."""
    return who is None or policy.decide(who, UPDATE, RESOURCE, obj=project.department).allowed


def departments_open_to_projects(who) -> QuerySet[Department]:
    """The departments `who` may create projects in (all, for a team admin): one query."""
    return (
        policy.restrict(Department.objects.order_by("name"), who, UPDATE)
        if who is not None
        else Department.objects.order_by("name")
    )


def _require_project_creation(who, department: Department, doing: str = "create projects in") -> None:
    """A team admin, or an admin of `department` (decided by the policy, a refusal audited)."""
    if who is not None:
        policy.require(
            who,
            UPDATE,
            RESOURCE,
            obj=department,
            target=f"department/{department.name}",
            refusal=f"may not {doing} department {department.name} (it takes a team "
            "admin or an admin of that department)",
            field="department",
            value=department.name,
        )


# --- create --------------------------------------------------------------------------------------------


@dataclass
class ProjectCreated:
    project: Project
    role_created: bool


def create_department(name: str, actor: Actor, *, description: str = "", who=None) -> Department:
    require_team_admin(who)
    _check_team_name(name)
    text = _description(description)
    with transaction.atomic():
        try:
            with transaction.atomic():  # the unique index decides, also between two concurrent creates
                department = Department.objects.create(name=name, description=text)
        except IntegrityError:
            raise _exists("department", name) from None
        audit.record("team.create", actor, target=f"department/{name}")
    return department


def create_project(
    name: str, department: str, actor: Actor, *, description: str = "", idp_groups=(), who=None
) -> ProjectCreated:
    """A project in `department`, linked to role `osmo-<name>` (created when missing; `idp_groups` are
    added to the role's IdP mapping)."""
    if who is not None:  # neither a team admin nor any department's admin: refused before any lookup
        policy.require(
            who, UPDATE, RESOURCE, obj=Department, refusal="may not create projects", field="", value=RESOURCE
        )
    _check_team_name(name)
    groups, text = _idp_groups(idp_groups), _description(description)
    parent = Department.objects.filter(name=department).first() if "\x00" not in str(department) else None
    if parent is None:
        raise DepartmentNotFound(
            f"no department named {department!r}; create it first (team create department)",
            field="department",
            value=department,
        )
    _require_project_creation(who, parent)  # outside the transaction: the refusal's audit event stays
    with transaction.atomic():
        if Project.objects.filter(name=name).exists():
            raise _exists("project", name)
        role, created = roles.ensure_team_role(
            role_name(name), actor, external_roles=groups, description=f"role of project {name}"
        )
        try:
            with transaction.atomic():  # a concurrent create of the same name: the unique index decides
                project = Project.objects.create(name=name, department=parent, role=role, description=text)
        except IntegrityError:
            raise _exists("project", name) from None
        audit.record(
            "team.create",
            actor,
            target=f"project/{name}",
            detail={"department": department, "role": role.name, "role_created": created},
        )
    return ProjectCreated(project, created)


# --- change ------------------------------------------------------------------------------------------------


def update_project(
    name: str, actor: Actor, *, priority=None, description=None, slack_webhook=None, who=None
) -> Project:
    """Change a project's priority, description and/or Slack webhook (None: unchanged; `""` removes the
    webhook). Refused whole on any bad value; a change is one audit event `team.update` with each changed
    field's `[before, after]` (a webhook only redacted: portal.webhooks; none if nothing changed). Its queues on
    KAI backends follow (quotas hears the save)."""
    project = get_project(name, who)  # one `who` may not see is a 404, as an unknown one
    _require_project_creation(who, project.department, "change projects of")
    wanted = {}
    if priority is not None:
        wanted["priority"] = check_priority(priority)
    if description is not None:
        wanted["description"] = _description(description)
    if slack_webhook is not None:
        wanted["slack_webhook"] = webhooks.checked(slack_webhook)
    with transaction.atomic():
        project = Project.objects.select_for_update().select_related("department", "role").get(pk=project.pk)
        changed = {field: [getattr(project, field), value] for field, value in wanted.items()}
        changed = {field: pair for field, pair in changed.items() if pair[0] != pair[1]}
        if changed:
            for field, (_, value) in changed.items():
                setattr(project, field, value)
            project.save(update_fields=[*changed, "updated_at"])
            if "slack_webhook" in changed:
                changed["slack_webhook"] = [webhooks.redacted(url) for url in changed["slack_webhook"]]
            audit.record("team.update", actor, target=f"project/{project.name}", detail=changed)
    return project


def check_priority(value: object) -> int:
    """A project priority: an integer in PRIORITY_MIN…PRIORITY_MAX."""
    number = int(value) if isinstance(value, str) and _INTEGER.fullmatch(value) else value
    if isinstance(number, bool) or not isinstance(number, int) or not PRIORITY_MIN <= number <= PRIORITY_MAX:
        raise TeamInvalid(
            f"must be an integer from {PRIORITY_MIN} to {PRIORITY_MAX} (higher is served first for over-quota "
            "capacity; 0 is the default)",
            field="priority",
            value=value,
        )
    return number


def project_history(name: str, who=None) -> list[dict]:
    """The project's audit events (created, changed), newest first, at most HISTORY_MAX: who, when, what."""
    project = get_project(name, who)
    events = AuditEvent.objects.filter(
        target=f"project/{project.name}", action__in=("team.create", "team.update"), outcome="ok"
    ).order_by("-at", "-id")[:HISTORY_MAX]
    return [
        {"at": e.at, "action": e.action, "actor": e.actor_name, "source": e.source, "changes": e.detail} for e in events
    ]


def _exists(kind: str, name: str) -> TeamExists:
    return TeamExists(f"{kind} {name} already exists", field="name", value=name)


def _check_team_name(name: object) -> None:
    check_name(name, "name")
    if len(name) > NAME_MAX_LENGTH:
        raise TeamInvalid(
            f"is longer than {NAME_MAX_LENGTH} characters (its role osmo-<name> must fit 128)", field="name", value=name
        )
    if role_name(name) in BUILTIN_ROLES:
        raise TeamInvalid(
            f"names a built-in role ({role_name(name)}); a project's role must be its own", field="name", value=name
        )


def _description(value: object) -> str:
    if not isinstance(value, str):
        raise TeamInvalid("must be text", field="description", value=value)
    if len(value) > DESCRIPTION_MAX_LENGTH:
        raise TeamInvalid(f"is longer than {DESCRIPTION_MAX_LENGTH} characters", field="description", value=value)
    return value.strip()


def _idp_groups(values) -> list[str]:
    names = []
    for index, value in enumerate(values or ()):
        if not isinstance(value, str) or not value.strip() or "\x00" in value or len(value) > 255:
            raise TeamInvalid(
                "must be an IdP group or role name (1-255 characters)", field=f"idp_groups[{index}]", value=value
            )
        names.append(value.strip())
    return names


# --- read ----------------------------------------------------------------------------------------------


def projects_visible_to(who) -> QuerySet[Project]:
    """Every project for a team admin (or the operator); otherwise the projects `who` belongs to and those of
    the departments `who` administers (`policy.restrict`). One query for the page, whatever the number of
    rows (department and role joined, members counted)."""
    rows = _visible(Project.objects.all(), who, Project.objects.filter(role__name__in=_role_names(who)))
    return (
        rows.select_related("department", "role")
        .annotate(member_count=Count("role__group__user", distinct=True))
        .order_by("name")
    )


def departments_visible_to(who) -> QuerySet[Department]:
    """Every department for a team admin; otherwise the departments of `who`'s projects and those `who`
    administers. One query."""
    mine = Department.objects.filter(
        pk__in=Project.objects.filter(role__name__in=_role_names(who)).values("department_id")
    )
    return (
        _visible(Department.objects.all(), who, mine)
        .annotate(project_count=Count("projects", distinct=True))
        .order_by("name")
    )


def _visible(rows: QuerySet, who, as_member: QuerySet) -> QuerySet:
    """What the policy lets `who` see of `rows` (roles, object rights), plus what membership shows."""
    if who is None:
        return rows
    return policy.restrict(rows, who, (READ, UPDATE)) | as_member


def get_project(name: str, who=None) -> Project:
    """The project, if `who` may see it; any other is a 404 exactly as an unknown one (names are guessable)."""
    project = projects_visible_to(who).filter(name=name).first() if "\x00" not in name else None
    if project is None:
        raise ProjectNotFound(f"no project named {name!r}", field="name", value=name)
    return project


def get_department(name: str, who=None) -> Department:
    department = departments_visible_to(who).filter(name=name).first() if "\x00" not in name else None
    if department is None:
        raise DepartmentNotFound(f"no department named {name!r}", field="name", value=name)
    return department


def members_of(project: Project) -> list[str]:
    return sorted(project.role.group.user_set.values_list("username", flat=True))


def describe_project(project: Project, *, members: bool = False) -> dict:
    data = {
        "name": project.name,
        "department": project.department.name,
        "description": project.description,
        "role": project.role.name,
        "priority": project.priority,
        "idp_groups": project.idp_groups,
        "member_count": getattr(project, "member_count", None),
        "created_at": project.created_at,
    }
    if members:
        data["members"] = members_of(project)
        data["member_count"] = len(data["members"])
    return data


def describe_departments(departments, who=None) -> list[dict]:
    """Each department with the names of its projects that `who` may see (two queries for any number)."""
    departments = list(departments)
    names: dict[int, list[str]] = {department.pk: [] for department in departments}
    visible = projects_visible_to(who).filter(department__in=list(names)).values_list("department_id", "name")
    for department_id, name in visible:
        names[department_id].append(name)
    return [
        {"name": d.name, "description": d.description, "projects": names[d.pk], "created_at": d.created_at}
        for d in departments
    ]


def _role_names(who) -> list[str]:
    return list(policy.principal(who).roles) if who is not None else []


# --- department admins ---------------------------------------------------------------------------------


def admin_right() -> policy.ObjectRight:
    """The object right of a department's admins (registered by `TeamsConfig.ready`)."""
    return next(right for right in policy.object_rights_of(Department) if not right.via)


def department_admins(name: str, who=None) -> list[str]:
    """Usernames of the department's admins: for team admins and the department's own admins."""
    department = get_department(name, who)
    if who is not None:
        policy.require(
            who,
            READ,
            RESOURCE,
            obj=department,
            target=f"department/{department.name}",
            refusal=f"may not list the admins of department {department.name}",
            field="department",
            value=department.name,
        )
    return [user.get_username() for user in object_rights.holders(admin_right(), department)]


def add_department_admin(name: str, username: str, actor: Actor, *, who=None) -> list[str]:
    """Make `username` an admin of the department (audited; a team admin's act, never an admin's)."""
    require_team_admin(who, "may not appoint department admins")
    department = get_department(name)
    object_rights.grant(admin_right(), department, username, actor)
    return department_admins(name)


def remove_department_admin(name: str, username: str, actor: Actor, *, who=None) -> list[str]:
    require_team_admin(who, "may not remove department admins")
    department = get_department(name)
    object_rights.revoke_username(admin_right(), department, username, actor)
    return department_admins(name)


# --- charging workflows --------------------------------------------------------------------------------


def member_projects(who) -> list[str]:
    """Names of the projects `who` belongs to (holds the role of), sorted. One query."""
    return list(Project.objects.filter(role__name__in=_role_names(who)).order_by("name").values_list("name", flat=True))


# (role names, requested) → project, per process while the access epoch holds (a project's save or delete
# moves it: TeamsConfig.ready); refusals are never cached.
_CHARGED = EpochCache(size=1024)


def charged_project(who, requested: str = "") -> Project | None:
    """The project a submission by `who` is charged to (one query, none while cached: a project depends only
    on the principal's roles and the name requested):

    * `requested` named: that project; `who` must belong to it, or be a team admin (`config:Update` on
      `config/team`), who may charge any project.
    * none named: the only project `who` belongs to; none when `who` belongs to none (teams are optional:
      a portal without projects works as before); several is a `project_required` error listing them.
    """
    principal = policy.principal(who)
    key = (tuple(sorted(principal.roles)), requested)
    return _CHARGED.lookup(key, lambda: _charged_project(principal, requested))


def _charged_project(principal, requested: str) -> Project | None:
    if requested:
        project = (
            Project.objects.select_related("role").filter(name=requested).first() if "\x00" not in requested else None
        )
        if project is None:
            raise UnknownProject(f"no project named {requested!r}{_yours(principal)}", field="project", value=requested)
        if project.role.name not in principal.roles and not principal.decide(UPDATE, RESOURCE).allowed:
            raise PermissionDenied(
                f"{principal.name} is not a member of project {requested} (its members hold "
                f"role {project.role.name}){_yours(principal)}",
                field="project",
                value=requested,
            )
        return project
    mine = list(Project.objects.filter(role__name__in=list(principal.roles)).order_by("name").only("pk", "name"))
    if len(mine) > 1:
        names = [project.name for project in mine]
        raise ProjectChoiceRequired(
            f"you belong to several projects ({', '.join(names)}); name the one to charge with project=<name>",
            choices=names,
        )
    return mine[0] if mine else None


def _yours(principal) -> str:
    names = member_projects(principal)
    return f"; your projects: {', '.join(names)}" if names else "; you belong to no project"
