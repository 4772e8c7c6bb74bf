"""What deleting a machine pool took along, read back from history, and how a rollback that makes the machine
pool again puts it back (docs/machine-pool-platforms.md, "Roll back a deletion").

`delete_machine_pool` writes in one transaction, all described alike ("machine pool NAME deleted…") by the
same author: a POOL revision of each pool that lost a platform made for it, the deleted POD_TEMPLATE revision
of `machinepool-NAME`, then the deleted MACHINE_POOL revision. So what a deletion took along is found among
the revisions written between the machine pool's previous revision and its deletion, with that description
and author: the template as its previous revision had it, each platform as its pool's previous revision had it.

A rollback of the machine pool to a revision before its deletion (`configs.store.rollback`, the type's
companions' `restore`) puts them back in its transaction, as an admin expects of undoing a delete that took them along:
the template as it was, then each platform added back to its pool as it was, the pool otherwise as it is now.
A platform made again since is left as it is, and so is one whose pool is gone; a template made again since is
not restored from history; the rollback's page and result say which. The template is then brought in step with
the machine pool as rolled back (`follow_machine_pool`), as after any save of a machine pool.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Q

from clusters.models import MachinePool
from configs import store
from configs.models import Revision
from configs.revisions import Actor
from pools.models import Platform, PodTemplate, Pool
from pools.services import machine_pool_removal
from pools.services.machine_pool_platforms import follow_machine_pool, template_name


@dataclass
class Went:
    """One object a machine pool's deletion took along."""

    pool: str  # the platform's pool; "" for the pod template
    name: str  # the platform's or the template's
    removed_by: Revision  # the POOL or POD_TEMPLATE revision that removed it
    before: dict  # its body before: the template's, or the platform's entry in its pool

    @property
    def what(self) -> str:
        return f"platform {self.pool}/{self.name}" if self.pool else f"pod template {self.name}"

    @property
    def restored_as(self) -> str:
        """Where its body comes back from: `restored as POOL rosa r3 had it (the rest of the pool as it is now)`."""
        removed = self.removed_by
        said = f"restored as {removed.config_type} {removed.name} r{removed.revision - 1} had it"
        return said + (" (the rest of the pool as it is now)" if self.pool else "")


def went_with(deleted: Revision) -> list[Went]:
    """What the deleted MACHINE_POOL revision `deleted` took along: its pod template first, then its platforms.
    Three queries."""
    previous = (
        Revision.objects.filter(config_type="MACHINE_POOL", name=deleted.name, revision__lt=deleted.revision)
        .order_by("-revision")
        .values_list("pk", flat=True)
        .first()
    )
    written = list(
        Revision.objects.filter(
            config_type__in=("POOL", "POD_TEMPLATE"),
            description=deleted.description,
            author_name=deleted.author_name,
            pk__gt=previous or 0,
            pk__lt=deleted.pk,
        ).order_by("config_type", "name", "revision")
    )
    befores = _previous_snapshots(written)
    went = []
    for revision in written:
        before = befores.get((revision.config_type, revision.name, revision.revision - 1))
        if before is None:  # no body to put back
            continue
        if revision.config_type == "POD_TEMPLATE" and revision.deleted and revision.name == template_name(deleted.name):
            went.append(Went("", revision.name, revision, before))
        elif revision.config_type == "POOL" and revision.snapshot:
            gone = sorted(set(before.get("platforms") or {}) - set(revision.snapshot.get("platforms") or {}))
            went += [Went(revision.name, platform, revision, before["platforms"][platform]) for platform in gone]
    return sorted(went, key=lambda item: (item.pool != "", item.pool, item.name))


def along(deleted: Revision) -> list[store.Along]:
    """The MACHINE_POOL type's `along` (MachinePoolCompanions): what `deleted` took along, each with
    what a rollback making the machine pool again would do with it now."""
    went = went_with(deleted)
    standing = _standing(went)
    return [
        store.Along(
            what=item.what,
            config_type=item.removed_by.config_type,
            name=item.removed_by.name,
            revision=item.removed_by.revision,
            revision_id=item.removed_by.pk,
            on_rollback=standing.get(item.what) or item.restored_as,
        )
        for item in went
    ]


def restore(deleted: Revision, actor: Actor, *, description: str = "", tags=()) -> list[str]:
    """The MACHINE_POOL type's `restore` (MachinePoolCompanions): inside a rollback that has just made machine
    pool `deleted.name` again, put back what `deleted` took along (see the module); what it did, one line each."""
    went = went_with(deleted)
    standing = _standing(went)
    said, by_pool = [], {}
    for item in went:  # the template first: the platforms name it
        if item.what in standing:
            said.append(f"{item.what} {standing[item.what]}")
        elif item.pool:
            by_pool.setdefault(item.pool, []).append(item)
        else:
            result = store.apply("POD_TEMPLATE", item.name, item.before, actor, description=description, tags=tags)
            said.append(f"{item.what} restored (revision {result.revision})")
    for pool, items in sorted(by_pool.items()):  # one revision a pool
        body = store.show("POOL", pool)
        body.setdefault("platforms", {}).update({item.name: item.before for item in items})
        result = store.apply("POOL", pool, body, actor, description=description, tags=tags)
        said += [f"{item.what} restored (POOL {pool} revision {result.revision})" for item in items]
    machine_pool = MachinePool.objects.filter(name=deleted.name).first()
    if machine_pool is not None and went:
        follow_machine_pool(machine_pool, actor)  # in step with the revision it was rolled back to
    return said


def _standing(went: list[Went]) -> dict[str, str]:
    """Per object a rollback would leave as it is now: why ("left as it is: made again since")."""
    named = [item.name for item in went if not item.pool]
    templates = set(PodTemplate.objects.filter(name__in=named).values_list("name", flat=True))
    pools = {w.pool for w in went if w.pool}
    existing_pools = set(Pool.objects.filter(name__in=pools).values_list("name", flat=True))
    platforms = set(Platform.objects.filter(pool__name__in=pools).values_list("pool__name", "name"))
    standing = {}
    for item in went:
        if (item.pool, item.name) in platforms:
            standing[item.what] = "left as it is: made again since"
        elif not item.pool and item.name in templates:  # it follows the machine pool, as on any save of it
            standing[item.what] = "not restored: made again since, it is brought in step with the machine pool"
        elif item.pool and item.pool not in existing_pools:
            standing[item.what] = f"not restored: pool {item.pool} is gone"
    return standing


def _previous_snapshots(written: list[Revision]) -> dict[tuple[str, str, int], dict]:
    """The revision before each of `written`, by (type, name, number): one query."""
    if not written:
        return {}
    wanted = Q()
    for revision in written:
        wanted |= Q(config_type=revision.config_type, name=revision.name, revision=revision.revision - 1)
    rows = Revision.objects.filter(wanted).values_list("config_type", "name", "revision", "snapshot")
    return {(config_type, name, number): snapshot for config_type, name, number, snapshot in rows}


class MachinePoolCompanions:
    """The platform and pod template made for a machine pool, in the config store's deletes and rollbacks
    (configs.registry.install_companions, from PoolsConfig.ready())."""

    delete = staticmethod(machine_pool_removal.config_delete)
    takes_along = staticmethod(machine_pool_removal.takes_along)
    along = staticmethod(along)
    restore = staticmethod(restore)
