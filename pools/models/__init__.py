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
from pools.models.revision import ConfigType, Revision

__all__ = [
    "Backend",
    "ConfigType",
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
    "Revision",
]
