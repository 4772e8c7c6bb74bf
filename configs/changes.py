"""Config history by type, as OSMO keeps it: every write of a config type is one numbered `Change`
(`POOL:7`), and the whole type as it was at a change is derived from the object revisions (configs.models).

Read here: one change, the type's objects at a change, the history list with OSMO's filters; written here:
a change's tags and its hiding (OSMO's `config delete TYPE:N`). Writes of objects go through configs.store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from configs.errors import ConfigError, ConfigNotFound
from configs.models import Change, Revision
from configs.revisions import check_type


@dataclass
class HistoryQuery:
    """OSMO's history filters (`GET /api/configs/history`): the newest `limit` changes after `offset`,
    listed oldest first unless `order` is DESC; `at_timestamp` gives each type's change current then."""

    config_types: list[str] = field(default_factory=list)
    name: str | None = None
    revision: int | None = None
    tags: list[str] = field(default_factory=list)
    created_before: datetime | None = None
    created_after: datetime | None = None
    at_timestamp: datetime | None = None
    order: str = "ASC"
    offset: int = 0
    limit: int = 20


MAX_REVISION = 2**31 - 1  # the column's range


def get(config_type: str, number: int) -> Change:
    config_type = check_type(config_type)
    if not 0 < number <= MAX_REVISION:
        raise ConfigError(f"must be between 1 and {MAX_REVISION}", field="revision", value=number)
    found = Change.objects.filter(config_type=config_type, revision=number).first()
    if found is None:
        raise ConfigNotFound(f"{config_type} has no revision {number}", field="revision", value=number)
    if found.deleted_at is not None:
        raise ConfigError(
            f"{config_type} revision {number} was deleted from the history by {found.deleted_by or 'someone'}",
            field="revision",
            value=number,
        )
    return found


def state(config_type: str, number: int) -> dict[str, object]:
    """`{name: body}` of every object of the type as it was right after change `number`."""
    return states(config_type, [number])[number]


def states(config_type: str, numbers) -> dict[int, dict[str, object]]:
    """`state` at several changes of one type in one query: the type's object revisions up to the latest
    asked for, replayed in order (a hidden change still counts: its writes happened)."""
    wanted = sorted(set(numbers))
    result: dict[int, dict[str, object]] = {}
    if not wanted:
        return result
    rows = (
        Revision.objects.filter(config_type=check_type(config_type), change__revision__lte=wanted[-1])
        .order_by("change__revision", "revision")
        .values_list("change__revision", "name", "snapshot", "deleted")
    )
    current: dict[str, object] = {}
    for number, name, snapshot, deleted in rows:
        while wanted and number > wanted[0]:
            result[wanted.pop(0)] = dict(sorted(current.items()))
        if deleted:
            current.pop(name, None)
        else:
            current[name] = snapshot
    for number in wanted:
        result[number] = dict(sorted(current.items()))
    return result


def history(query: HistoryQuery) -> list[Change]:
    rows = Change.objects.filter(deleted_at__isnull=True)
    if query.config_types:
        rows = rows.filter(config_type__in=[check_type(t) for t in query.config_types])
    if query.name is not None:
        rows = rows.filter(name=query.name)
    if query.revision is not None:
        rows = rows.filter(revision=query.revision)
    if query.created_before is not None:
        rows = rows.filter(created_at__lt=query.created_before)
    if query.created_after is not None:
        rows = rows.filter(created_at__gt=query.created_after)
    if query.tags:
        rows = _with_tags(rows, query.tags)
    if query.at_timestamp is not None:
        current = rows.filter(created_at__lte=query.at_timestamp).values("config_type").annotate(top=Max("revision"))
        pairs = Q(pk__in=[])
        for row in current:
            pairs |= Q(config_type=row["config_type"], revision=row["top"])
        found = list(rows.filter(pairs).order_by("created_at", "id").prefetch_related("revisions"))
    else:
        newest = rows.order_by("-created_at", "-id").prefetch_related("revisions")
        found = list(newest[query.offset : query.offset + query.limit])
        found.reverse()
    return found if query.order == "ASC" else found[::-1]


def hide(config_type: str, number: int, by: str) -> Change:
    """OSMO's `config delete TYPE:N`: the change leaves the history list; the current one cannot."""
    with transaction.atomic():
        found = get(config_type, number)
        latest = Change.objects.filter(config_type=found.config_type).aggregate(n=Max("revision"))["n"]
        if found.revision == latest:
            raise ConfigError(
                f"is the current revision of {found.config_type}; it cannot be deleted", field="revision", value=number
            )
        found.deleted_at, found.deleted_by = timezone.now(), by
        found.save(update_fields=["deleted_at", "deleted_by"])
        return found


def retag(config_type: str, number: int, add: list[str], remove: list[str]) -> Change:
    with transaction.atomic():
        found = get(config_type, number)
        found.tags = sorted((set(found.tags) | set(add)) - set(remove))
        found.save(update_fields=["tags"])
        return found


def _with_tags(rows, tags: list[str]):
    if connection.vendor == "postgresql":
        return rows.filter(tags__contains=list(tags))
    keep = [row.pk for row in rows.only("pk", "tags") if set(tags) <= set(row.tags)]  # SQLite: no JSON contains
    return rows.filter(pk__in=keep)
