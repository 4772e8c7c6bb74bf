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
from pools.models.revision import ConfigType, Revision

__all__ = [
    "Backend",
    "ConfigType",
    "Platform",
    "PlatformTemplate",
    "PlatformValidation",
    "PodTemplate",
    "Pool",
    "PoolTemplate",
    "PoolValidation",
    "ResourceValidation",
    "Revision",
]
