"""Errors of the pools app that every door names the same way."""

from __future__ import annotations

from configs.errors import ConfigNotFound


class PoolNotFound(ConfigNotFound):
    """No pool of that name: 404 `pool_not_found` wherever a pool is named (submit, preview, resources)."""

    code = "pool_not_found"

    @classmethod
    def named(cls, name: str, field: str = "pool") -> PoolNotFound:
        return cls(f"no pool named {name!r}", field=field, value=name)


class NodeNotFound(ConfigNotFound):
    """No node of that name in any backend's inventory: 404 `node_not_found` (`GET /api/resources/{name}`)."""

    code = "node_not_found"
