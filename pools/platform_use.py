"""Which platforms unfinished workflows use: a question the pools app asks the workflows app above it, without
importing it. Workflows registers the answer in its AppConfig.ready(), as quotas registers workflows' admission
gate. With none registered (pools used alone), no platform is in use.

Asked before a platform is removed for its machine pool (`pools.services.machine_pool_removal`).
"""

from __future__ import annotations

from collections.abc import Callable

# [(pool name, platform name)] → {(pool name, platform name): [workflow ids, oldest first]}, only those in use
Ask = Callable[[list[tuple[str, str]]], dict[tuple[str, str], list[str]]]
_ask: Ask | None = None


def register(ask: Ask | None) -> Ask | None:
    """Install `ask` (None removes it); returns the one it replaces."""
    global _ask
    previous, _ask = _ask, ask
    return previous


def unfinished_workflows(platforms: list[tuple[str, str]]) -> dict[tuple[str, str], list[str]]:
    if not platforms or _ask is None:
        return {}
    return _ask(platforms)
