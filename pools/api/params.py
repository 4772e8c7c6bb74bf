"""Query parameters as OSMO's client sends them: booleans spelt by Python's `requests` (`True`, `False`),
and lists repeated (`?pools=a&pools=b`) or comma-separated."""

from __future__ import annotations

from portal.errors import DomainError
from portal.numbers import checked_count

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def flag(request, key: str, default: bool = False) -> bool:
    """`?key=` as a boolean, in any case; another word is refused naming the parameter."""
    value = request.query_params.get(key)
    if value is None or value == "":
        return default
    if value.lower() in TRUE:
        return True
    if value.lower() in FALSE:
        return False
    raise DomainError("not a boolean; expected true or false", field=key, value=value)


def names(request, key: str) -> list[str]:
    """The names given in `?key=`; an empty one (`?pools=`, `?pools=a,,b`) is refused naming the value, so a
    typo never silently widens the answer to every pool."""
    found = []
    for value in request.query_params.getlist(key):
        parts = [name.strip() for name in value.split(",")]
        if not all(parts):
            raise DomainError(
                f"an empty {key[:-1]} name; give {key} as name[,name...], or leave {key} out for all",
                field=key,
                value=value,
            )
        found.extend(parts)
    return checked_count(found, key)
