"""Who provisions a backend's machine pools: one interface (`base.Provider`), the providers listed in
`registry.KINDS`:

- `rosa`: the OpenShift Cluster Manager machine-pools REST API (Backend.ocm_url, ocm_cluster_id, ocm_token);
- `karpenter`: `karpenter.sh/v1` NodePools on the backend's own cluster (its connection, karpenter_node_class).

`provider_for(backend)` picks one by `Backend.machine_provider`; None when the backend has none (its machine
pools are exported, never reconciled). docs/machine-pool-providers.md.
"""

from __future__ import annotations

import importlib

from clusters.machinepools.providers import registry
from clusters.machinepools.providers.base import Observed, Provider, ProviderError, differences

__all__ = ["Observed", "Provider", "ProviderError", "differences", "provider_for"]


def provider_for(backend, catalog=None) -> Provider | None:
    """The provider of `backend` (a Backend row), or None; a provider that cannot be set up raises a permanent
    ProviderError naming the missing setting."""
    if not backend.machine_provider:
        return None
    kind = registry.BY_NAME.get(backend.machine_provider)
    if kind is None:
        raise ProviderError(
            f"backend {backend.name}: unknown machine provider {backend.machine_provider!r}", field="machine_provider"
        )
    for need in kind.needs:
        if not getattr(backend, need.setting):
            raise ProviderError(
                f"backend {backend.name}: machine provider {kind.name} needs {need.setting}", field=need.setting
            )
    return importlib.import_module(kind.module).from_backend(backend, catalog)
