"""The whole of a config type in OSMO's JSON shapes, from `{name: body}` (configs.store.show, configs.changes).

`GET /api/configs/<type>` (the `listing`) and a history entry's `data` wrap a type as OSMO's service does,
because the `osmo` CLI reads those wrappers: `config update POOL` sends `current["pools"]` back, and
`config show`/`update` with a name unwraps `pools`/`backends` and turns a list of named objects into a map.
"""

from __future__ import annotations


def listing(config_type: str, objects: dict[str, object]) -> object:
    """`GET /api/configs/<type>`: pools under `pools`, backends as a named list under `backends`, roles as a
    list; pod templates and resource validations as `{name: body}`."""
    if config_type == "BACKEND":
        return {"backends": _named_list(objects)}
    return history_data(config_type, objects)


def history_data(config_type: str, objects: dict[str, object]) -> object:
    """A history entry's `data` (OSMO's config_history.data): as the listing, but backends as a bare list."""
    if config_type == "POOL":
        return {"pools": objects}
    if config_type in ("BACKEND", "ROLE"):
        return _named_list(objects)
    return objects


def _named_list(objects: dict[str, object]) -> list:
    return [{"name": name, **body} if isinstance(body, dict) else body for name, body in objects.items()]
