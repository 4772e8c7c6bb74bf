from pools.models.config import (
    Backend,
    Platform,
    PlatformTemplate,
    PlatformValidation,
    PodTemplate,
    Pool,
    PoolTemplate,
    PoolValidation,
    ResourceValidation,
)
from pools.models.inventory import Node, NodeMembership, PoolCapacity, ResourceType

__all__ = [
    "Backend",
    "Node",
    "NodeMembership",
    "Platform",
    "PlatformTemplate",
    "PlatformValidation",
    "PodTemplate",
    "Pool",
    "PoolCapacity",
    "PoolTemplate",
    "PoolValidation",
    "ResourceType",
    "ResourceValidation",
]
