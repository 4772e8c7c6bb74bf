"""A platform made from a machine pool, and kept in step with it (docs/machine-pool-platforms.md).

`make_platform` writes two config objects through `configs.store.apply`, so history holds both:
- the pod template `machinepool-<name>`: a nodeSelector on `node.kubernetes.io/machinepool=<name>` (the
  label every node of the machine pool carries, the one the seed's batch Job selects) and, for each of
  the pool's taints, the toleration the seed writes (`operator: Equal`);
- the platform (named after the machine pool unless told otherwise) in the chosen pool, with that
  template in its `override_pod_template`. A pool with another platform on that template already (the demo's
  `robotics-spot/batch` for `additional`) gets no second one: `AlreadyServed` names the platform to use.

When a machine pool is saved with other taints or labels, `follow_machine_pool` writes a new revision
of its template (`clusters.signals.machine_pool_changed`); a template already equal is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from clusters.machinepools.spec import MACHINEPOOL_LABEL, MachinePoolSpec
from clusters.models import MachinePool
from configs import store
from configs.errors import ConfigError, ConfigNotFound
from configs.revisions import Actor
from pools.models import PodTemplate, Pool
from portal.errors import Conflict

TEMPLATE_PREFIX = "machinepool-"
SYSTEM = Actor(name="system", source="system")


@dataclass
class MadePlatform:
    machine_pool: str
    pool: str
    platform: str
    template: str
    template_revision: int | None
    pool_revision: int | None
    created: bool  # the platform is new in the pool

    @property
    def outcome(self) -> str:
        """What was done, in the doors' words: created, brought up to date, or already in step (no revision)."""
        if self.created:
            return "created"
        if self.template_revision is None and self.pool_revision is None:
            return "already in step"
        return "brought up to date"

    def said(self) -> str:
        """`platform rosa/gpu created from machine pool gpu (pod template machinepool-gpu, revision 1)`."""
        outcome = self.outcome
        link = "with" if outcome == "already in step" else "from"
        template = self.template
        if self.template_revision is not None:
            template += f", revision {self.template_revision}"
        platform = f"{self.pool}/{self.platform}"
        return f"platform {platform} {outcome} {link} machine pool {self.machine_pool} (pod template {template})"

    def as_dict(self) -> dict:
        return vars(self).copy()


class AlreadyServed(Conflict):
    """The pool already has a platform on the machine pool's template: a second one beside it is refused, naming
    it (`platform`), for the caller to use that one or bring it up to date (`--platform` with its name)."""

    code = "already_served"

    def __init__(self, machine_pool: str, pool: str, platform: str, asked: str) -> None:
        self.machine_pool, self.pool, self.platform = machine_pool, pool, platform
        self.template = template_name(machine_pool)
        super().__init__(
            f"platform {pool}/{platform} already serves machine pool {machine_pool} (pod template "
            f"{self.template}): use it, or bring it up to date with --platform {platform}",
            field="platform",
            value=asked,
        )


def template_name(machine_pool: str) -> str:
    return f"{TEMPLATE_PREFIX}{machine_pool}"


def template_body(spec: MachinePoolSpec) -> dict:
    """The pod template that lands a pod on this machine pool's nodes, and only there."""
    body: dict = {"spec": {"nodeSelector": {MACHINEPOOL_LABEL: spec.name}}}
    if spec.taints:
        body["spec"]["tolerations"] = spec.tolerations()
    return body


def template_description(spec: MachinePoolSpec) -> str:
    labels = ", ".join(f"{k}={v}" for k, v in sorted(spec.labels.items())) or "none"
    taints = ", ".join(f"{t.key}={t.value}:{t.effect}" for t in spec.taints) or "none"
    return f"machine pool {spec.name} ({spec.instance_type}, {spec.capacity_type}): labels {labels}; taints {taints}"


def make_platform(
    machine_pool: str, actor: Actor, *, pool: str | None = None, platform: str | None = None
) -> MadePlatform:
    """Create (or bring up to date) the pod template and the platform of `machine_pool` in `pool`."""
    row = _machine_pool(machine_pool)
    target = _pool(row, pool)
    platform_name = platform or row.name
    spec = row.spec()
    with transaction.atomic():
        body = store.show("POOL", target.name)
        platforms = body.setdefault("platforms", {})
        serving = sorted(
            name
            for name, entry in platforms.items()
            if name != platform_name and template_name(row.name) in (entry.get("override_pod_template") or [])
        )
        if serving:
            raise AlreadyServed(row.name, target.name, serving[0], platform_name)
        template = store.apply(
            "POD_TEMPLATE",
            template_name(row.name),
            template_body(spec),
            actor,
            description=f"made from {template_description(spec)}",
        )
        created = platform_name not in platforms
        entry = platforms.setdefault(platform_name, {})
        templates = list(entry.get("override_pod_template") or [])
        if template_name(row.name) not in templates:
            templates.append(template_name(row.name))
        entry["override_pod_template"] = templates
        if not entry.get("description"):
            entry["description"] = f"Nodes of machine pool {row.name} ({spec.instance_type}, {spec.capacity_type})"
        result = store.apply("POOL", target.name, body, actor, description=f"platform from machine pool {row.name}")
    return MadePlatform(
        machine_pool=row.name,
        pool=target.name,
        platform=platform_name,
        template=template_name(row.name),
        template_revision=template.revision,
        pool_revision=result.revision,
        created=created,
    )


def follow_machine_pool(machine_pool: MachinePool, actor: Actor = SYSTEM) -> int | None:
    """A new revision of the machine pool's template when its taints or labels moved it; else None."""
    name = template_name(machine_pool.name)
    current = PodTemplate.objects.filter(name=name).values_list("body", flat=True).first()
    if current is None:
        return None  # no platform was made from this machine pool
    spec = machine_pool.spec()
    wanted = template_body(spec)
    if current == wanted:
        return None
    result = store.apply(
        "POD_TEMPLATE", name, wanted, actor, description=f"machine pool changed: {template_description(spec)}"
    )
    return result.revision if result.changed else None


def _machine_pool(name: str) -> MachinePool:
    row = MachinePool.objects.select_related("backend").filter(name=name).first()
    if row is None:
        known = ", ".join(MachinePool.objects.order_by("name").values_list("name", flat=True)) or "none defined"
        raise ConfigNotFound(f"no machine pool by this name (machine pools: {known})", field="machine_pool", value=name)
    return row


def _pool(row: MachinePool, name: str | None) -> Pool:
    on_backend = list(Pool.objects.filter(backend=row.backend).order_by("name"))
    names = ", ".join(p.name for p in on_backend) or "none"
    if name is None:
        if len(on_backend) == 1:
            return on_backend[0]
        raise ConfigError(
            f"choose the pool with --pool: backend {row.backend.name} has "
            f"{'no pool' if not on_backend else 'several pools'} (pools: {names})",
            field="pool",
            value=None,
        )
    for pool in on_backend:
        if pool.name == name:
            return pool
    where = Pool.objects.filter(name=name).values_list("backend__name", flat=True).first()
    reason = (
        f"runs on backend {where}, not on {row.backend.name} where machine pool {row.name} is"
        if where
        else "no pool by this name"
    )
    raise ConfigError(f"{reason} (pools on {row.backend.name}: {names})", field="pool", value=name)
