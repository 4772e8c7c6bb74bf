from pools.models.config import (
    Platform,
    PlatformTemplate,
    PlatformValidation,
    PodTemplate,
    Pool,
    PoolTemplate,
    PoolValidation,
    ResourceValidation,
)
from pools.models.node_membership import CapacitySummary, NodeMembership, PoolCapacity, ResourceType
from pools.models.profile import UserProfile

__all__ = [
    "CapacitySummary",
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
    "UserProfile",
]
