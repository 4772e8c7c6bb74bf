"""The handlers of the BACKEND and MACHINE_POOL config types (clusters.config_types).

BACKEND: a `<set …>` marker in a document keeps the stored secret; pools and machine pools using a backend
are its referrers. MACHINE_POOL: the checks that need the database — a known backend (a machine pool stays
on it), a known instance type (refused with the list of known ones), and an instance type that the
backend's provider cannot change on an existing pool (ROSA). Registered by `ClustersConfig.ready()`.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusters.config_types import BACKEND, BACKEND_SECRETS, MACHINE_POOL
from clusters.machinepools import instance_types
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
