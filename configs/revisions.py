"""Revision history: record every config write, list it, diff two revisions."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml
from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Max

from configs import registry
from configs.errors import ConfigError, ConfigNotFound
from configs.models import Change as TypeChange
from configs.models import ConfigType, Revision


@dataclass(frozen=True)
class Actor:
    """Who made a change, through which door (`cli`, `api`, `admin`, `system`) and from where."""

    name: str
    user: AbstractBaseUser | None = None
    source: str = "cli"
    remote_addr: str | None = None

    @classmethod
    def of(cls, user, source: str, remote_addr: str | None = None) -> Actor:
        return cls(name=user.get_username() if user else "system", user=user, source=source, remote_addr=remote_addr)

    @classmethod
    def for_request(cls, request, source: str) -> Actor:
        user = request.user if request.user.is_authenticated else None
        return cls.of(user, source, request.META.get("REMOTE_ADDR") or None)


# Called with (config_type, [Revision, ...], actor) after every recorded write, inside its transaction.
# The access app registers the audit trail here (access.services.audit).
LISTENERS: list[Callable[[str, list[Revision], Actor], None]] = []


def _notify(config_type: str, rows: list[Revision], actor: Actor) -> None:
    for listener in LISTENERS:
        listener(config_type, rows, actor)


@dataclass
class Change:
    path: str
    op: str  # added | removed | changed
    old: object = None
    new: object = None


@dataclass
class Diff:
    config_type: str
    name: str
    first: int
    second: int
    changes: list[Change] = field(default_factory=list)
    unified: str = ""

    def as_dict(self) -> dict:
        return {
            "config_type": self.config_type,
            "name": self.name,
            "first_revision": self.first,
            "second_revision": self.second,
            "changes": [vars(c) for c in self.changes],
            "unified": self.unified,
        }


def open_change(config_type: str, name: str, actor: Actor, *, description: str = "", tags=()) -> TypeChange:
    """The next change of a config type (OSMO's revision number of the type). Callers hold the transaction;
    writers of the same type queue on a transaction lock so numbers never collide."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [f"configs.change.{config_type}"])
    latest = TypeChange.objects.filter(config_type=config_type).aggregate(n=Max("revision"))["n"] or 0
    return TypeChange.objects.create(
        config_type=config_type,
        revision=latest + 1,
        name=name,
        author=actor.user if actor.user and actor.user.pk else None,
        username=actor.name,
        source=actor.source,
        description=description,
        tags=list(tags),
    )


def record(
    config_type: str,
    name: str,
    snapshot,
    actor: Actor,
    *,
    description: str = "",
    tags=(),
    deleted: bool = False,
    change: TypeChange | None = None,
) -> Revision:
    """Append the next revision of (type, name), in `change` (a new change named `name` if none). Callers
    hold the transaction."""
    change = change or open_change(config_type, name, actor, description=description, tags=tags)
    latest = Revision.objects.filter(config_type=config_type, name=name).aggregate(n=Max("revision"))["n"] or 0
    revision = Revision.objects.create(
        change=change,
        config_type=config_type,
        name=name,
        revision=latest + 1,
        snapshot=snapshot,
        deleted=deleted,
        author=actor.user if actor.user and actor.user.pk else None,
        author_name=f"{actor.name} ({actor.source})",
        description=description,
        tags=list(tags),
    )
    _notify(config_type, [revision], actor)
    return revision


def record_many(
    config_type: str,
    snapshots: dict[str, object],
    actor: Actor,
    *,
    description: str = "",
    tags=(),
    change: TypeChange | None = None,
    change_name: str = "",
) -> dict[str, int]:
    """Append one revision per name in one insert, all in `change` (a new change named `change_name` if
    none); returns the new revision number of each name."""
    if not snapshots:
        return {}
    change = change or open_change(config_type, change_name, actor, description=description, tags=tags)
    latest = dict(
        Revision.objects.filter(config_type=config_type, name__in=list(snapshots))
        .values("name")
        .annotate(n=Max("revision"))
        .values_list("name", "n")
    )
    author = actor.user if actor.user and actor.user.pk else None
    rows = [
        Revision(
            change=change,
            config_type=config_type,
            name=name,
            revision=latest.get(name, 0) + 1,
            snapshot=snapshot,
            author=author,
            author_name=f"{actor.name} ({actor.source})",
            description=description,
            tags=list(tags),
        )
        for name, snapshot in snapshots.items()
    ]
    Revision.objects.bulk_create(rows)
    _notify(config_type, rows, actor)
    return {row.name: row.revision for row in rows}


def latest_snapshot(config_type: str, name: str):
    revision = Revision.objects.filter(config_type=config_type, name=name).order_by("-revision").first()
    return None if revision is None or revision.deleted else revision.snapshot


def get_revision(config_type: str, name: str, number: int) -> Revision:
    check_type(config_type)
    try:
        return Revision.objects.get(config_type=config_type, name=name, revision=number)
    except Revision.DoesNotExist:
        raise ConfigNotFound(f"{config_type} {name} has no revision {number}", field="revision", value=number) from None


def history(config_type: str | None = None, name: str | None = None, *, limit: int = 100, offset: int = 0):
    query = Revision.objects.select_related("author").order_by("-created_at", "-id")
    if config_type:
        query = query.filter(config_type=check_type(config_type))
    if name:
        query = query.filter(name=name)
    return list(query[offset : offset + limit])


def revision_summary(revision: Revision, *, with_data: bool = False) -> dict:
    summary = {
        "config_type": revision.config_type,
        "name": revision.name,
        "revision": revision.revision,
        "author": revision.author_name,
        "created_at": revision.created_at.isoformat(),
        "description": revision.description,
        "tags": revision.tags,
        "deleted": revision.deleted,
    }
    if with_data:
        summary["data"] = revision.snapshot
    return summary


def diff(config_type: str, name: str, first: int, second: int) -> Diff:
    old, new = get_revision(config_type, name, first), get_revision(config_type, name, second)
    result = Diff(config_type, name, first, second)
    _walk(old.snapshot, new.snapshot, "", result.changes)
    result.unified = unified_diff(old.snapshot, new.snapshot, "json", f"{name} r{first}", f"{name} r{second}")
    return result


def edit_format(config_type: str) -> str:
    """How people edit objects of the type ("yaml" for pod templates, else "json"): diffs are shown in it."""
    config_type = check_type(config_type)
    handler = registry.get(config_type) if config_type in registry.config_types() else None
    schema = getattr(handler, "schema", None)
    return getattr(schema, "edit_format", "json")


def render(snapshot, fmt: str) -> str:
    """A snapshot as the text it is edited as; None (an absent object) is empty."""
    return _yaml(snapshot) if fmt == "yaml" else _pretty(snapshot)


def unified_diff(old, new, fmt: str, fromfile: str, tofile: str) -> str:
    """A unified diff of two snapshots rendered as `fmt` ("yaml" or "json"); None is an absent object."""
    return "".join(
        difflib.unified_diff(
            render(old, fmt).splitlines(keepends=True),
            render(new, fmt).splitlines(keepends=True),
            fromfile=fromfile,
            tofile=tofile,
        )
    )


def _yaml(snapshot) -> str:
    return yaml.safe_dump(snapshot, sort_keys=False, allow_unicode=True) if snapshot is not None else ""


def check_type(config_type: str, *, spelled=str) -> str:
    """The config type in upper case, or a ConfigError listing the types as `spelled` (the API: lower case)."""
    value = str(config_type).upper()
    if value not in ConfigType.values:
        raise ConfigError(
            f"is not a config type; expected one of {', '.join(spelled(t) for t in ConfigType.values)} (in any case)",
            field="config_type",
            value=config_type,
        )
    return value


def _pretty(snapshot) -> str:
    return json.dumps(snapshot, indent=2, sort_keys=True) + "\n" if snapshot is not None else ""


def _walk(old, new, path: str, out: list[Change]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new), key=str):
            child = f"{path}.{key}" if path else str(key)
            if key not in old:
                out.append(Change(child, "added", new=new[key]))
            elif key not in new:
                out.append(Change(child, "removed", old=old[key]))
            else:
                _walk(old[key], new[key], child, out)
    elif old != new:
        out.append(Change(path or "(document)", "changed", old=old, new=new))
