"""Config use cases shared by the CLI, the REST API and the admin: show, apply, delete, rollback.

Every write is one transaction: the object, its references, the recomputed resolved config and the
revision are saved together or not at all.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import PROTECT, RESTRICT, Model, OuterRef, ProtectedError, RestrictedError, Subquery

from configs import changes, registry, revisions
from configs.errors import ConfigError, ConfigInUse, ConfigNotFound
from configs.models import Revision
from configs.revisions import Actor


@dataclass
class ApplyResult:
    config_type: str
    name: str
    created: bool
    changed: bool
    revision: int | None
    warnings: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)  # a rollback that made it again: what it put back with it

    def as_dict(self) -> dict:
        answer = vars(self).copy()
        return answer if self.restored else {k: v for k, v in answer.items() if k != "restored"}

    def with_restored(self) -> str:
        """What the doors add to "rolled back": `, with platform rosa/gpu restored (...); ...`, or ""."""
        return f", with {'; '.join(self.restored)}" if self.restored else ""


def show(config_type: str, name: str | None = None):
    """One object's body, or `{name: body}` for every object of the type (the shapes `apply` reads)."""
    handler = registry.get(revisions.check_type(config_type))
    if name is None:
        return {obj.name: handler.snapshot(obj) for obj in handler.queryset().order_by("name")}
    return handler.snapshot(_get(handler, name))


def exists(config_type: str, name: str) -> bool:
    return registry.get(revisions.check_type(config_type)).queryset().filter(name=name).exists()


def unwrap(config_type: str, name: str, body: object) -> object:
    """Accept a named object's body as the seed documents write it: `{NAME: body}` or a body with `name`."""
    if isinstance(body, dict) and len(body) == 1 and name in body:
        body = body[name]
    if isinstance(body, dict) and "name" in body:
        if body["name"] != name:
            raise ConfigError(
                f"does not match the name given on the command line ({name})", field="name", value=body["name"]
            )
        if not registry.get(revisions.check_type(config_type)).schema.name_in_body:
            body = {k: v for k, v in body.items() if k != "name"}
    return body


def apply(config_type: str, name: str, body: object, actor: Actor, *, description: str = "", tags=()) -> ApplyResult:
    handler = registry.get(revisions.check_type(config_type))
    with transaction.atomic():
        return _apply_batch(handler, [(name, body)], actor, description, tags, change_name=name)[0]


def patch(
    config_type: str, name: str, fields: object, actor: Actor, *, deep: bool = True, description: str = "", tags=()
) -> ApplyResult:
    """Apply `changes` over the object's current body: OSMO's named PATCH (`deep`: nested objects merge,
    lists and values replace, `{"$action": "delete"}` removes a key) or its backend POST (top-level fields
    replace). An object that does not exist is a 404."""
    if not isinstance(fields, dict):
        raise ConfigError("must be an object of the fields to change", field="configs_dict", value=fields)
    with transaction.atomic():
        current = show(config_type, name)
        if not isinstance(current, dict):
            raise ConfigError(
                "this config type's body is not an object; send the whole body with PUT", field="name", value=name
            )
        body = merge_patch(current, fields) if deep else {**current, **fields}
        return apply(config_type, name, body, actor, description=description, tags=tags)


def merge_patch(current: dict, fields: dict) -> dict:
    merged = copy.deepcopy(current)
    for key, value in fields.items():
        if isinstance(value, dict) and value.get("$action") == "delete":
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_patch(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def apply_many(
    config_type: str, documents: object, actor: Actor, *, description: str = "", tags=()
) -> list[ApplyResult]:
    """Apply a `{name: body, ...}` map (or OSMO's list form, `[{"name": ..., ...}, ...]`, used for roles);
    all objects are saved or none is."""
    documents = _as_map(documents)
    if not isinstance(documents, dict) or not documents:
        raise ConfigError(
            'without a NAME the file must map names to bodies: {"<name>": {...}, ...}',
            field="(document)",
            value=type(documents).__name__,
        )
    handler = registry.get(revisions.check_type(config_type))
    with transaction.atomic():
        return _apply_batch(handler, list(documents.items()), actor, description, tags, qualify=True)


@dataclass
class Deletion:
    """What one delete wrote: the object's deleted revision and, for a type whose delete takes others along
    (MACHINE_POOL: its platform and pod template), what went with it and what was kept, as said by the doors."""

    config_type: str
    name: str
    revision: int
    along: list[str] = field(default_factory=list)  # "platform rosa/gpu (POOL rosa revision 4)"
    kept: list[str] = field(default_factory=list)  # "pod template machinepool-gpu: used by platform rosa/p too"

    def said(self) -> str:
        text = f"{self.config_type} {self.name} deleted (revision {self.revision})"
        text += f", with {' and '.join(self.along)}" if self.along else ""
        return text + "".join(f"; kept {kept}" for kept in self.kept)

    def as_dict(self) -> dict:
        """The API's answer: `with` and `kept` only when the delete took something along or kept it."""
        answer = {"config_type": self.config_type, "name": self.name, "revision": self.revision, "deleted": True}
        return answer | ({"with": self.along} if self.along else {}) | ({"kept": self.kept} if self.kept else {})


def delete(config_type: str, name: str, actor: Actor, *, description: str = "", tags=(), change=None) -> int:
    """Delete one object (refused while referenced); its deleted revision."""
    return remove(config_type, name, actor, description=description, tags=tags, change=change).revision


def remove(config_type: str, name: str, actor: Actor, *, description: str = "", tags=(), change=None) -> Deletion:
    """Delete one object, with what its type's companions take along (configs.registry.install_companions)."""
    handler = registry.get(revisions.check_type(config_type))
    if handler.companions is not None:
        return handler.companions.delete(name, actor, description=description, tags=tags, change=change)
    number = delete_alone(handler.config_type, name, actor, description=description, tags=tags, change=change)
    return Deletion(handler.config_type, name, number)


def delete_alone(config_type: str, name: str, actor: Actor, *, description: str = "", tags=(), change=None) -> int:
    """Delete the object and nothing else, refused while referenced: what a type's companions call last."""
    handler = registry.get(revisions.check_type(config_type))
    with transaction.atomic():
        obj = _get(handler, name, lock=True)
        _refuse_if_referenced(handler, obj)
        try:
            obj.delete()
        except (ProtectedError, RestrictedError) as error:  # a reference added since the check above
            raise _in_use(name, describe_protected(_blocking(error))) from None
        return revisions.record(
            handler.config_type, name, None, actor, description=description, tags=tags, deleted=True, change=change
        ).revision


def restore(config_type: str, number: int, actor: Actor, *, description: str = "", tags=()) -> dict:
    """OSMO's rollback: make the whole config type what it was at its change `number`, as one new change
    (objects absent then are deleted, refused while referenced; a deleted object made again gets back what its
    deletion took along, as `rollback` does). History is never rewritten."""
    config_type = revisions.check_type(config_type)
    handler = registry.get(config_type)
    with transaction.atomic():
        target = changes.get(config_type, number)
        then = changes.state(config_type, number)
        description = f"Roll back {config_type} to r{number}" + (f": {description}" if description else "")
        change = revisions.open_change(config_type, "", actor, description=description, tags=tags)
        existing = set(handler.queryset().values_list("name", flat=True))
        undone = _deletions_undone(handler, sorted(set(then) - existing))
        results = _apply_batch(handler, list(then.items()), actor, description, tags, qualify=True, change=change)
        restored = [
            said
            for deletion in undone
            for said in handler.companions.restore(deletion, actor, description=description, tags=tags)
        ]
        gone = sorted(existing - set(then))
        for name in gone:
            delete(config_type, name, actor, description=description, tags=tags, change=change)
    answer = {
        "config_type": config_type,
        "revision": change.revision,
        "rolled_back_to": target.revision,
        "changed": sorted(r.name for r in results if r.changed),
        "deleted": gone,
    }
    return answer | ({"restored": restored} if restored else {})


@dataclass
class Along:
    """One object a delete took along (a MACHINE_POOL's platform or pod template), as history recorded it."""

    what: str  # "platform rosa/gpu-spot"
    config_type: str  # the revision that removed it: "POOL", "rosa", 4
    name: str
    revision: int
    revision_id: int  # its row, for a link
    on_rollback: str  # what a rollback making the deleted object again does with it: "restored as in POOL rosa r3"


def deleted_along(deleted: Revision) -> list[Along]:
    """What the deletion `deleted` took along ([] for a type whose delete takes nothing, or not a deletion)."""
    handler = registry.get(deleted.config_type)
    return handler.companions.along(deleted) if deleted.deleted and handler.companions is not None else []


def rollback(
    config_type: str, name: str, revision: int, actor: Actor, *, description: str = "", tags=()
) -> ApplyResult:
    """Make `name` look like it did at `revision`, as a new revision (history is never rewritten). Making a
    deleted object again also puts back what its deletion took along (the type's companions), or nothing."""
    target = revisions.get_revision(revisions.check_type(config_type), name, int(revision))
    description = description or f"Roll back {target.config_type} {name} to r{target.revision}"
    if target.deleted:
        number = delete(target.config_type, name, actor, description=description, tags=tags)
        return ApplyResult(target.config_type, name, created=False, changed=True, revision=number)
    handler = registry.get(target.config_type)
    with transaction.atomic():
        undone = _deletion_undone(handler, name)
        result = apply(target.config_type, name, target.snapshot, actor, description=description, tags=tags)
        if undone is not None:
            result.restored = handler.companions.restore(undone, actor, description=description, tags=tags)
    return result


def _deletion_undone(handler: registry.Handler, name: str) -> Revision | None:
    """The deletion a rollback of `name` to a live revision undoes (see _deletions_undone), or None."""
    undone = _deletions_undone(handler, [name])
    return undone[0] if undone else None


def _deletions_undone(handler: registry.Handler, names: list[str]) -> list[Revision]:
    """The deletions that making these objects again undoes: each one's latest revision, when that is a deletion
    (so the object is absent) and the type puts back what a deletion took along. One query, by name."""
    if handler.companions is None or not names:
        return []
    latest = (
        Revision.objects.filter(config_type=OuterRef("config_type"), name=OuterRef("name"))
        .order_by("-revision")
        .values("revision")[:1]
    )
    return list(
        Revision.objects.filter(
            config_type=handler.config_type, name__in=names, deleted=True, revision=Subquery(latest)
        ).order_by("name")
    )


@dataclass
class RollbackPlan:
    """What `rollback` would change, for a confirmation page: a unified diff in the format the object is
    edited in (YAML for pod templates, JSON otherwise)."""

    config_type: str
    name: str
    revision: int
    fmt: str
    unified: str
    deletes: bool
    before: str = ""  # the object now, and as the rollback would write it, rendered in `fmt`
    after: str = ""
    undoes: int | None = None  # the deletion (its revision) this rollback undoes by making the object again
    along: list[Along] = field(default_factory=list)  # what that deletion took along, and what becomes of it
    takes_along: list[str] = field(default_factory=list)  # deleting it again: what goes (or stays) with it


def rollback_plan(config_type: str, name: str, revision: int) -> RollbackPlan:
    target = revisions.get_revision(revisions.check_type(config_type), name, int(revision))
    try:
        now = show(target.config_type, name)
    except ConfigNotFound:  # deleted since: rolling back re-creates it
        now = None
    fmt = registry.get(target.config_type).schema.edit_format
    before = f"{name} now" if now is not None else f"{name} (absent)"
    after = f"{name} r{target.revision}" + (" (deleted)" if target.deleted else "")
    unified = revisions.unified_diff(now, target.snapshot, fmt, before, after)
    handler = registry.get(target.config_type)
    undone = _deletion_undone(handler, name) if not target.deleted else None
    deleting = target.deleted and now is not None and handler.companions is not None
    return RollbackPlan(
        target.config_type,
        name,
        target.revision,
        fmt,
        unified,
        deletes=target.deleted,
        before=revisions.render(now, fmt),
        after=revisions.render(target.snapshot, fmt),
        undoes=undone.revision if undone is not None else None,
        along=deleted_along(undone) if undone is not None else [],
        takes_along=handler.companions.takes_along(name) if deleting else [],
    )


def referrers(config_type: str, obj) -> list[str]:
    """What stops `obj` from being deleted: the type's own references (with the field that refers), then
    any other PROTECT/RESTRICT relation the database would refuse on (workflow history, ...)."""
    return _referrers(registry.get(revisions.check_type(config_type)), obj)


def protected_referrers(obj: Model, shown: int = 3) -> list[str]:
    """Rows whose PROTECT or RESTRICT foreign keys point at `obj` (a pool's workflows, ...), per model: a
    count and the first few, so a pool with a long history costs two small queries, not a load of it all."""
    found = []
    for relation in obj._meta.related_objects:
        if relation.on_delete not in (PROTECT, RESTRICT) or relation.many_to_many:
            continue
        rows = relation.related_model._base_manager.filter(**{relation.field.name: obj})
        count = rows.count()
        if count:
            found.append(_counted(relation.related_model._meta, count, [str(row) for row in rows[:shown]], shown))
    return found


def describe_protected(objects, shown: int = 3) -> list[str]:
    """`["2 workflows (hello-1, hello-2)"]`: one entry per model, naming the first few objects."""
    by_model: dict = {}
    for item in objects:
        by_model.setdefault(item._meta, []).append(str(item))
    return [
        _counted(meta, len(names), sorted(names), shown)
        for meta, names in sorted(by_model.items(), key=lambda entry: str(entry[0].verbose_name))
    ]


def _counted(meta, count: int, names: list[str], shown: int) -> str:
    """`2 workflows (hello-1, hello-2)`: the count, the model's name in number, the first `shown` names."""
    listed = ", ".join(names[:shown]) + (", …" if count > shown else "")
    return f"{count} {meta.verbose_name if count == 1 else meta.verbose_name_plural} ({listed})"


def _referrers(handler: registry.Handler, obj: Model) -> list[str]:
    return handler.referrers(obj) or protected_referrers(obj)


def _refuse_if_referenced(handler: registry.Handler, obj: Model) -> None:
    found = _referrers(handler, obj)
    if found:
        raise _in_use(obj.name, found)


def _in_use(name: str, found: list[str]) -> ConfigInUse:
    return ConfigInUse(
        f"is still referenced by {', '.join(found)}; it cannot be deleted while they exist", field="name", value=name
    )


def _blocking(error: ProtectedError | RestrictedError):
    return error.protected_objects if isinstance(error, ProtectedError) else error.restricted_objects


def _apply_batch(
    handler: registry.Handler,
    items: list[tuple[str, object]],
    actor: Actor,
    description: str,
    tags,
    *,
    qualify: bool = False,
    change=None,
    change_name: str = "",
) -> list[ApplyResult]:
    """Parse everything first, load what the batch refers to once, write only what changed."""
    docs = []
    for name, body in items:
        try:
            docs.append((name, handler.parse(name, _copy(body))))
        except ConfigError as error:
            raise _within(error, name) if qualify else error from None
    names = [name for name, _ in docs]
    existing = {obj.name: obj for obj in _locked(handler).filter(name__in=names)}
    prepared = handler.prepare([doc for _, doc in docs])
    results, saved, snapshots = [], [], {}
    for name, doc in docs:
        after = handler.doc_snapshot(doc)
        current = existing.get(name)
        changed = current is None or handler.snapshot(current) != after
        if changed:
            try:
                saved.append(handler.save(doc, current, prepared))
            except ConfigError as error:
                raise _within(error, name) if qualify else error from None
            snapshots[name] = after
        results.append(
            ApplyResult(
                handler.config_type,
                name,
                created=current is None,
                changed=changed,
                revision=None,
                warnings=handler.warnings(doc),
            )
        )
    if saved:
        handler.after_save(saved, prepared)
    numbers = revisions.record_many(
        handler.config_type,
        snapshots,
        actor,
        description=description,
        tags=tags,
        change=change,
        change_name=change_name,
    )
    for result in results:
        result.revision = numbers.get(result.name)
    return results


def _locked(handler: registry.Handler):
    """Existing objects, row-locked so concurrent writers of the same names queue up."""
    return handler.queryset().select_for_update(of=("self",))


def _get(handler: registry.Handler, name: str, *, lock: bool = False):
    query = handler.queryset()
    if lock:
        query = handler.model.objects.select_for_update()
    try:
        return query.get(name=name)
    except handler.model.DoesNotExist:
        raise ConfigNotFound(f"no {handler.config_type} named {name!r}", field="name", value=name) from None


def _within(error: ConfigError, name: str) -> ConfigError:
    field = f"{name}.{error.field}" if error.field and error.field != "(document)" else name
    return type(error)(error.reason, field=field, value=error.value)


def _as_map(documents: object) -> object:
    if isinstance(documents, list) and documents and all(isinstance(d, dict) and "name" in d for d in documents):
        names = [d["name"] for d in documents]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigError("the list names the same object twice", field="name", value=duplicates[0])
        return {d["name"]: d for d in documents}
    return documents


def _copy(body: object) -> object:
    # Parsers pop fields they ignore; never mutate the caller's document.
    return copy.deepcopy(body)
