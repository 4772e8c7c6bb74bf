"""The handlers of the BACKEND and MACHINE_POOL config types (clusters.config_types).

BACKEND: a `<set …>` marker in a document keeps the stored secret; pools and machine pools using a backend
are its referrers; a change of its provider, ROSA topology or region that its machine pools would break is
refused. MACHINE_POOL: the checks that need the database — a known backend (a machine pool stays on it), a
known instance type (refused with the list of known ones), and an instance type that the backend's provider
cannot change on an existing pool (ROSA). Registered by `ClustersConfig.ready()`.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.config_types import BACKEND, BACKEND_SECRETS, MACHINE_POOL
from clusters.machinepools import instance_types
from clusters.machinepools.provider_limits import most_nodes
from clusters.machinepools.providers import registry as providers
from clusters.machinepools.spec import InstanceType
from clusters.models import Backend, MachinePool, WatcherLease
from configs.errors import ConfigError
from configs.kinds import KEEP_SECRET
from configs.registry import SchemaHandler


class BackendHandler(SchemaHandler):
    schema, model = BACKEND, Backend

    def prepare(self, docs):
        """A `<set …>` marker keeps the stored secret: put the stored value in the document."""
        keep = [doc for doc in docs if any(getattr(doc, key) is KEEP_SECRET for key in BACKEND_SECRETS)]
        stored = (
            {
                b.name: b
                for b in Backend.objects.filter(name__in=[doc.name for doc in keep]).only("name", *BACKEND_SECRETS)
            }
            if keep
            else {}
        )
        for doc in keep:
            for key in BACKEND_SECRETS:
                if getattr(doc, key) is KEEP_SECRET:
                    current = getattr(stored[doc.name], key) if doc.name in stored else ""
                    if not current:
                        doc.warnings.append(f"{key}: the <set> marker keeps a stored value, but none is stored")
                    setattr(doc, key, current)
        return None

    def save(self, doc, existing, prepared):
        if existing is not None:
            _check_machine_pools_under(doc, existing)
        before = existing.watched_identity() if existing is not None else None
        backend = super().save(doc, existing, prepared)
        if before is not None and backend.watched_identity() != before:
            # the resourceVersions the watchers recorded are the other cluster's: the next holder lists afresh
            WatcherLease.objects.filter(backend=backend).update(versions={})
        return backend

    def referrers(self, obj):
        pools = [f"pool {name}" for name in obj.pools.order_by("name").values_list("name", flat=True)]
        machines = obj.machine_pools.order_by("name").values_list("name", flat=True)
        return [*pools, *(f"machine pool {name}" for name in machines)]


# The backend settings a machine pool is checked against when it is saved (MachinePoolHandler.save).
PROVIDER_SETTINGS = ("machine_provider", "rosa_topology", "aws_region")


def _check_machine_pools_under(doc, existing: Backend) -> None:
    """A change of the backend's provider, ROSA topology or region is refused when one of its machine pools
    would be refused under the new settings, as that pool's own save would be (ROSA Classic's 249 nodes under
    pools of 300, zones or an instance type outside the new region, Karpenter's fields under ROSA): otherwise
    the pools would go to the provider and fail there. The error names the backend's setting, its new value,
    and the machine pool with its own field and reason."""
    changed = [name for name in PROVIDER_SETTINGS if (getattr(doc, name) or "") != (getattr(existing, name) or "")]
    if not changed:
        return
    # the largest first: a cap the pools break together is said of the pool that weighs most
    pools = sorted(existing.machine_pools.all(), key=lambda pool: (-most_nodes(pool), pool.name))
    if not pools:
        return
    kind = providers.BY_NAME.get(doc.machine_provider)
    catalog = instance_types.catalog()
    total = sum(most_nodes(pool) for pool in pools)
    for pool in pools:
        try:
            pool_doc = MACHINE_POOL.parse(pool.name, MACHINE_POOL.snapshot(pool))
            _check_instance_type(pool_doc, catalog, doc)
            if kind is not None:
                kind.check_machine_pool(pool_doc, pool, doc, total - most_nodes(pool))
        except ConfigError as problem:
            raise ConfigError(
                f"machine pool {pool.name} would be refused: {problem}; change or delete the machine pool first",
                field=changed[0],
                value=getattr(doc, changed[0]),
            ) from None


@dataclass
class MachinePoolRefs:
    """What a batch of machine pool documents refers to, loaded once."""

    backends: dict[str, Backend]
    catalog: dict[str, InstanceType]


class MachinePoolHandler(SchemaHandler):
    schema, model = MACHINE_POOL, MachinePool

    def queryset(self):
        return MachinePool.objects.select_related("backend")

    def prepare(self, docs):
        names = {doc.backend for doc in docs}
        return MachinePoolRefs(
            backends={b.name: b for b in Backend.objects.filter(name__in=names)}, catalog=instance_types.catalog()
        )

    def save(self, doc, existing, prepared):
        backend = backend_of(doc, existing, prepared.backends, "machine pool")
        _check_instance_type(doc, prepared.catalog, backend)
        if kind := providers.BY_NAME.get(backend.machine_provider):
            kind.check_machine_pool(doc, existing, backend, _other_nodes(backend, doc.name))
        pool = existing or MachinePool(name=doc.name)
        self.schema.write(doc, pool)
        pool.backend, pool.autoscaling = backend, doc.autoscaling
        if not backend.machine_provider:
            pool.state = MachinePool.State.EXPORT_ONLY
        elif pool.state == MachinePool.State.EXPORT_ONLY:  # the backend has a provider now
            pool.state = MachinePool.State.PENDING
        pool.save()
        return pool


def backend_of(doc, existing, backends: dict[str, Backend], kind: str) -> Backend:
    """The backend a document of a per-backend object (`kind`: machine pool, node pool) names: known, and the
    one it was created on (such an object stays on its backend)."""
    backend = backends.get(doc.backend)
    if backend is None:
        raise ConfigError(
            "unknown backend; create it first with `config update BACKEND`", field="backend", value=doc.backend
        )
    if existing is not None and existing.backend_id != backend.pk:
        raise ConfigError(
            f"a {kind} stays on its backend ({existing.backend.name}); create another {kind} for {backend.name}",
            field="backend",
            value=doc.backend,
        )
    return backend


def _check_instance_type(doc, catalog: dict, backend: Backend) -> None:
    if doc.instance_type not in catalog:
        raise ConfigError(
            f"unknown instance type; known: {', '.join(sorted(catalog))} (admins add types under "
            "Clusters > Instance types)",
            field="instance_type",
            value=doc.instance_type,
        )
    regions = catalog[doc.instance_type].regions
    if backend.aws_region and regions and backend.aws_region not in regions:
        raise ConfigError(
            f"is not offered in {backend.name}'s region {backend.aws_region} (offered in {', '.join(regions)})",
            field="instance_type",
            value=doc.instance_type,
        )


def _other_nodes(backend: Backend, name: str) -> int:
    """The most nodes the backend's other machine pools may have together (its cluster's node cap counts all)."""
    pools = MachinePool.objects.filter(backend=backend).exclude(name=name)
    return sum(
        max_replicas if autoscaling else replicas
        for autoscaling, replicas, max_replicas in pools.values_list("autoscaling", "replicas", "max_replicas")
    )
