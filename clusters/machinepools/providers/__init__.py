"""Who provisions a backend's machine pools: one interface (`base.Provider`), two providers.

- `rosa`: the OpenShift Cluster Manager machine-pools REST API (Backend.ocm_url, ocm_cluster_id, ocm_token);
- `karpenter`: `karpenter.sh/v1` NodePools on the backend's own cluster (its connection, karpenter_node_class).

`provider_for(backend)` picks one by `Backend.machine_provider`; None when the backend has none (its machine
pools are exported, never reconciled). docs/machine-pool-providers.md.
"""

from __future__ import annotations

from clusters.machinepools.providers.base import Observed, Provider, ProviderError, differences
from portal.secrets import is_unreadable

__all__ = ["Observed", "Provider", "ProviderError", "differences", "provider_for"]


def provider_for(backend, catalog=None) -> Provider | None:
    """The provider of `backend` (a Backend row), or None; a provider that cannot be set up raises a permanent
    ProviderError naming the missing setting."""
    kind = backend.machine_provider
    if not kind:
        return None
    if kind == "rosa":
        from clusters.machinepools.providers.rosa import RosaProvider

        for setting in ("ocm_url", "ocm_cluster_id", "ocm_token"):
            if not getattr(backend, setting):
                raise ProviderError(f"backend {backend.name}: machine provider rosa needs {setting}", field=setting)
        if is_unreadable(backend.ocm_token):
            raise ProviderError(
                f"backend {backend.name}: the stored ocm_token cannot be decrypted with the configured "
                "FIELD_ENCRYPTION_KEYS: restore the key it was written with, or set the token again",
                field="ocm_token",
            )
        return RosaProvider(backend.ocm_url, backend.ocm_cluster_id, backend.ocm_token)
    if kind == "karpenter":
        from clusters.kube.connection import connect
        from clusters.kube.errors import KubeError
        from clusters.machinepools.instance_types import catalog as merged_catalog
        from clusters.machinepools.providers.karpenter import KarpenterProvider

        try:
            kube = connect(backend)
        except KubeError as error:
            raise ProviderError(error.reason, field=error.field) from None
        return KarpenterProvider(
            kube, backend.karpenter_node_class, catalog if catalog is not None else merged_catalog()
        )
    raise ProviderError(f"backend {backend.name}: unknown machine provider {kind!r}", field="machine_provider")
