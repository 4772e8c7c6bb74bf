"""The machine providers the portal knows, each described once (docs/machine-pool-providers.md, "Adding a
provider"): its name (`Backend.machine_provider`), the admin's label for it, the module that implements it
(imported on first use, so a command's start-up loads no provider's client), the backend settings it cannot
work without, and what it refuses in a machine pool before the provider itself would.

The BACKEND config type, the model's choices and `providers.provider_for` all read this table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from clusters.machinepools.kinds import DISK_DEFAULT_GIB
from clusters.machinepools.provider_limits import karpenter_problem, rosa_problem
from configs.errors import ConfigError


@dataclass(frozen=True)
class Need:
    """A backend setting a provider cannot work without, and what it is (said when it is missing)."""

    setting: str
    what: str


def _no_check(doc, existing, backend, other_nodes) -> None:
    return None


@dataclass(frozen=True)
class ProviderKind:
    name: str
    label: str
    module: str  # defines `from_backend(backend, catalog) -> Provider`
    needs: tuple[Need, ...] = ()
    # (doc, existing row or None, the Backend row, the most nodes of the backend's other machine pools):
    # raise ConfigError, or add warnings
    check_machine_pool: Callable = _no_check


def _rosa_machine_pool(doc, existing, backend, other_nodes) -> None:
    """ROSA: "You cannot change the machine pool node type or size. [...] specified during their creation only"
    (Red Hat OpenShift Service on AWS, Cluster administration, "About machine pools"); its node caps, zones,
    subnets and no Karpenter fields (provider_limits.rosa_problem)."""
    problem = rosa_problem(doc, backend.rosa_topology or "hcp", backend.aws_region, other_nodes)
    if problem is not None:
        raise problem
    if existing is not None and existing.instance_type != doc.instance_type:
        raise ConfigError(
            f"ROSA cannot change the instance type of an existing machine pool (it stays {existing.instance_type}); "
            f"create a new machine pool with {doc.instance_type} and delete this one",
            field="instance_type",
            value=doc.instance_type,
        )


def _karpenter_machine_pool(doc, existing, backend, other_nodes) -> None:
    """What a Karpenter NodePool cannot carry: a spot max price (Karpenter picks spot capacity by price and
    availability itself) is refused; the root disk comes from the EC2NodeClass, so a size is only noted.
    Karpenter reads a NodePool's requirements anew for each node it launches, so the instance type may change."""
    problem = karpenter_problem(doc)
    if problem is not None:
        raise problem
    if doc.max_price is not None:
        raise ConfigError(
            "Karpenter takes no spot max price (it chooses spot capacity by price and availability); leave "
            "max_price null",
            field="max_price",
            value=str(doc.max_price),
        )
    if doc.disk_size_gib != DISK_DEFAULT_GIB:
        doc.warnings.append(
            f"disk_size: on Karpenter the root volume is the EC2NodeClass's ({doc.backend}'s karpenter_node_class), "
            f"not {doc.disk_size_gib} GiB"
        )


KINDS = (
    ProviderKind(
        "rosa",
        "ROSA (OpenShift Cluster Manager)",
        "clusters.machinepools.providers.rosa",
        needs=(Need("ocm_cluster_id", "the cluster's OpenShift Cluster Manager id (rosa describe cluster)"),),
        check_machine_pool=_rosa_machine_pool,
    ),
    ProviderKind(
        "karpenter",
        "Karpenter (karpenter.sh/v1 NodePool)",
        "clusters.machinepools.providers.karpenter",
        needs=(Need("karpenter_node_class", "the EC2NodeClass its NodePools refer to"),),
        check_machine_pool=_karpenter_machine_pool,
    ),
)
BY_NAME = {kind.name: kind for kind in KINDS}
NONE = ("", "none")  # no provider: the portal only exports the backend's machine pools
CHOICES = (NONE, *((kind.name, kind.label) for kind in KINDS))
