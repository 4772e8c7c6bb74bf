"""Whole numbers as clients write them, within bounds: the one reading behind every integer of a query, a path
or an API body (portal.api), the counts of a workflow spec (workflows.spec_fields) and the numbers of the
command line (`checked_int` names the option). No Django import."""

from __future__ import annotations

import re

from portal.errors import DomainError

# The largest integer a PostgreSQL `integer` column (and a sane offset or revision number) holds: query
# parameters are capped here so that a huge number is a 400 naming the field, not a database error.
MAX_INT = 2_147_483_647
MIN_INT = -2_147_483_648
# The most items of one list a client sends: a query parameter repeated or comma-separated (`pools=a,b`), an
# array of an API body (roles, tags, variables). Django's DATA_UPLOAD_MAX_NUMBER_FIELDS (1,000) bounds the
# repeated form of a whole query; the comma-separated form and bodies are counted here.
MAX_LIST_ITEMS = 1000
# The most rows one page of a list answers (workflows, config history, users): REST `limit`/`count` and the
# command line's `--limit` alike.
MAX_PAGE = 1000

# An optional sign and at most 19 ASCII digits (`\d` would take other scripts' digits and `²`, which int()
# refuses): anything longer is out of every bound, and int() never meets Python's 4,300-digit limit.
_WHOLE = re.compile(r"[+-]?[0-9]{1,19}")


def bound_reason(least: int, most: int) -> str:
    return f"must be a whole number from {least} to {most}"


def whole_number(raw: object, least: int, most: int) -> int | None:
    """`raw` (a query string's text, or a JSON integer) as an int from `least` to `most`; None when it is not
    one: not a whole number ("1e30", "NaN", "inf", "5.0", a bool) or out of bounds."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, str) and _WHOLE.fullmatch(raw.strip()):
        value = int(raw.strip())
    else:
        return None
    return value if least <= value <= most else None


def checked_int(raw: object, field: str, least: int, most: int) -> int:
    """`raw` within its bounds, else a 400 naming `field`, the value and the bound."""
    value = whole_number(raw, least, most)
    if value is None:
        raise DomainError(bound_reason(least, most), field=field, value=raw)
    return value


def too_many(count: int) -> str:
    """The reason a list of `count` items is refused, or "" when it is within MAX_LIST_ITEMS."""
    return f"at most {MAX_LIST_ITEMS} items, not {count}" if count > MAX_LIST_ITEMS else ""


def checked_count(items: list, field: str) -> list:
    """`items` when there are at most MAX_LIST_ITEMS, else a 400 naming `field` and the count."""
    reason = too_many(len(items))
    if reason:
        raise DomainError(reason, field=field, value=len(items))
    return items
