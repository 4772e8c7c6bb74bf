"""Deleting a machine pool with the platform and pod template made for it (docs/machine-pool-platforms.md,
"Delete a machine pool"), as a ROSA or Karpenter admin expects: what was made for the machine pool goes with it.

- **Made for it**: the pod template `machinepool-<name>` (`make_platform`'s) and each platform whose only
  override pod template is that one. A platform that also has other templates is the admin's own: it stays,
  and so does the template it uses (said, not deleted).
- **Refused** while an unfinished workflow has a task on such a platform (`pools.platform_use`): the
  machine pool's nodes go with it, and the workflow's platform would vanish under it. The refusal names the
  workflows; cancel them or let them finish, then delete. Refused too while such a platform is its pool's
  `default_platform`.
- **History**: every removal is a revision, as from any door: a POOL revision per pool that loses a platform,
  a deleted POD_TEMPLATE revision, then the deleted MACHINE_POOL revision, all described "machine pool <name>
  deleted", in one transaction.
- **Every door**: the admin and `machinepool delete` call `delete_machine_pool`; the config store's delete
  of a MACHINE_POOL (REST `DELETE`, `config delete`, a rollback to a deletion) reaches it through
  `config_delete`, which `PoolsConfig.ready()` installs among the type's companions (configs.registry).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count

from clusters.models import MachinePool
from configs import store
from configs.errors import ConfigInUse, ConfigNotFound
from configs.revisions import Actor
from pools import platform_use
from pools.models import PlatformTemplate, PodTemplate, PoolTemplate
from pools.services.machine_pool_platforms import template_name

SHOWN = 5  # workflows named in a refusal


@dataclass
class Removal:
    """What deleting one machine pool removes, keeps and waits for."""

    machine_pool: str
    template: str = ""  # the template made for it, deleted with it ("" none, or kept)
    platforms: list[tuple[str, str]] = field(default_factory=list)  # (pool, platform) made for it
    kept: list[str] = field(default_factory=list)  # "pod template machinepool-x: used by platform p/q too"
    busy: dict[tuple[str, str], list[str]] = field(default_factory=dict)  # (pool, platform) → workflow ids

    @property
    def refusal(self) -> str:
        """Why it cannot be deleted now ("" it can)."""
        if not self.busy:
            return ""
        parts = []
        for (pool, platform), ids in sorted(self.busy.items()):
            listed = ", ".join(ids[:SHOWN]) + (", …" if len(ids) > SHOWN else "")
            parts.append(f"{pool}/{platform} ({len(ids)} workflow{'s' if len(ids) != 1 else ''}: {listed})")
        return (
            f"cannot be deleted while unfinished workflows use the platform made from it: {'; '.join(parts)}. "
            "Its nodes and that platform would go with it: cancel them or let them finish, then delete it"
        )

    def removed(self) -> list[str]:
        """What goes with it, as the confirmation page lists it."""
        found = [f"platform {pool}/{platform} (made from machine pool {self.machine_pool})"
                 for pool, platform in self.platforms]  # fmt: skip
        if self.template:
            found.append(f"pod template {self.template} (made from machine pool {self.machine_pool})")
        return found


@dataclass
class Deleted:
    removal: Removal
    revision: int  # the machine pool's deleted revision
    pool_revisions: dict[str, int] = field(default_factory=dict)
    template_revision: int | None = None

    def along(self) -> list[str]:
        """What went with it and the revisions that say so: `platform rosa/gpu (POOL rosa revision 4)`, ..."""
        removal, parts = self.removal, []
        for pool, platform in removal.platforms:
            parts.append(f"platform {pool}/{platform} (POOL {pool} revision {self.pool_revisions[pool]})")
        if removal.template:
            parts.append(f"pod template {removal.template} (revision {self.template_revision})")
        return parts

    def said(self) -> str:
        """`machine pool gpu deleted (revision 3), with platform rosa/gpu (POOL rosa revision 4) and pod template
        machinepool-gpu (revision 2)`; what was kept follows."""
        deletion = store.Deletion(
            "machine pool", self.removal.machine_pool, self.revision, self.along(), self.removal.kept
        )
        return deletion.said()


def plan(machine_pools: list[str]) -> dict[str, Removal]:
    """Per machine pool name: what deleting it would remove, keep and wait for. Four queries whatever the
    number of machine pools: the platforms' template uses and counts, the pools', the templates; and the workflows
    asked once)."""
    names = {template_name(name): name for name in machine_pools}
    removals = {name: Removal(name) for name in machine_pools}
    uses: dict[str, list[tuple[str, str, int]]] = {}  # template → (pool, platform, its override template count)
    rows = list(
        PlatformTemplate.objects.filter(template__name__in=names).values_list(
            "template__name", "platform__pool__name", "platform__name", "platform_id"
        )
    )
    counts = _template_counts({platform_id for *_, platform_id in rows})
    for template, pool, platform, platform_id in rows:
        uses.setdefault(template, []).append((pool, platform, counts[platform_id]))
    in_pools: dict[str, list[str]] = {}
    common = PoolTemplate.objects.filter(template__name__in=names).values_list("template__name", "pool__name")
    for template, pool in common:
        in_pools.setdefault(template, []).append(pool)
    existing = set(PodTemplate.objects.filter(name__in=names).values_list("name", flat=True))
    for template, name in names.items():
        removal = removals[name]
        others = [f"platform {pool}/{platform}" for pool, platform, count in uses.get(template, []) if count > 1]
        others += [f"pool {pool} (common_pod_template)" for pool in in_pools.get(template, [])]
        removal.platforms = sorted((pool, platform) for pool, platform, count in uses.get(template, []) if count == 1)
        if template in existing:
            if others:
                removal.kept.append(f"pod template {template}: used by {', '.join(sorted(others))} too")
            else:
                removal.template = template
    wanted = [platform for removal in removals.values() for platform in removal.platforms]
    busy = platform_use.unfinished_workflows(wanted)
    for removal in removals.values():
        removal.busy = {key: busy[key] for key in removal.platforms if key in busy}
    return removals


def delete_machine_pool(name: str, actor: Actor, *, description: str = "", tags=(), change=None) -> Deleted:
    """Delete machine pool `name` and what was made for it (see the module). Raises ConfigNotFound, and
    ConfigInUse while unfinished workflows use a platform made for it. Every revision is described "machine
    pool NAME deleted" (`: description` added when given) and tagged `tags`; `change` is a MACHINE_POOL change
    the machine pool's revision joins (a rollback of the whole type)."""
    with transaction.atomic():
        if not MachinePool.objects.select_for_update().filter(name=name).exists():
            raise ConfigNotFound("no machine pool by this name", field="name", value=name)
        removal = plan([name])[name]
        if removal.refusal:
            raise ConfigInUse(removal.refusal, field="name", value=name)
        said = f"machine pool {name} deleted" + (f": {description}" if description else "")
        described = {"description": said, "tags": tags}
        pool_revisions = {}
        for pool in sorted({pool for pool, _ in removal.platforms}):
            body = store.show("POOL", pool)
            for gone in (platform for owner, platform in removal.platforms if owner == pool):
                if body.get("default_platform") == gone:  # said as a refusal of this delete, not the pool's 400
                    raise ConfigInUse(
                        f"cannot be deleted while its platform {pool}/{gone} is pool {pool}'s default_platform: "
                        "choose another default for the pool first",
                        field="name",
                        value=name,
                    )
                body["platforms"].pop(gone, None)
            pool_revisions[pool] = store.apply("POOL", pool, body, actor, **described).revision
        template_revision = None
        if removal.template:
            template_revision = store.delete("POD_TEMPLATE", removal.template, actor, **described)
        revision = store.delete_alone("MACHINE_POOL", name, actor, change=change, **described)
    return Deleted(removal, revision, pool_revisions, template_revision)


def config_delete(name: str, actor: Actor, *, description: str = "", tags=(), change=None) -> store.Deletion:
    """The MACHINE_POOL type's `delete` (machine_pool_restore.MachinePoolCompanions): the config store's delete, from
    whichever door, deletes as `delete_machine_pool` does."""
    deleted = delete_machine_pool(name, actor, description=description, tags=tags, change=change)
    return store.Deletion("MACHINE_POOL", name, deleted.revision, deleted.along(), deleted.removal.kept)


def takes_along(name: str) -> list[str]:
    """The MACHINE_POOL type's `takes_along` (MachinePoolCompanions): what deleting `name` now removes
    with it ("platform rosa/gpu (made from machine pool gpu)") and keeps ("kept pod template ...")."""
    removal = plan([name])[name]
    return removal.removed() + [f"kept {kept}" for kept in removal.kept]


def _template_counts(platform_ids: set[int]) -> dict[int, int]:
    rows = (
        PlatformTemplate.objects.filter(platform_id__in=platform_ids)
        .values("platform_id")
        .annotate(count=Count("pk"))
        .values_list("platform_id", "count")
    )
    return dict(rows)
