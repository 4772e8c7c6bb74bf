"""Field-level validation shared by every door (CLI, API, admin): names, timeouts, exit actions.

Each check raises ConfigError naming the field, the value and the reason.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

from configs.errors import ConfigError

# OSMO's CONFIG_NAME_REGEX (src/lib/utils/common.py).
CONFIG_NAME_RE = re.compile(r"^[a-zA-Z]([a-zA-Z0-9_.-]*[a-zA-Z0-9])?$")
NAME_MAX_LENGTH = 128

_UNIT_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1, "ms": 0.001, "us": 0.000001}
_SHORT_TIMEOUT_RE = re.compile(r"^(\d+)(d|h|m|s|ms|us)$")
_ISO_RE = re.compile(
    r"^P(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+(?:\.\d+)?)S)?)?$"
)
MAX_TIMEOUT_DAYS = 3650  # ten years: longer is a typo, and would overflow timedelta and PostgreSQL intervals
MAX_TIMEOUT = timedelta(days=MAX_TIMEOUT_DAYS)
EXIT_ACTION_KEYS = ("COMPLETE", "FAIL", "RESCHEDULE")
_EXIT_CODE_MAX = 255
# OSMO's reserved exit codes (task.py ExitCode), which a task's exit actions may name too: 3006 is a preempted
# task's (docs/admission.md: `exitActions: {RESCHEDULE: "3006"}` queues a preempted workflow again).
_OSMO_CODES = ((1001, 1001), (3000, 3006), (4000, 4000))
_OUTSIDE = f"outside the exit code range 0-{_EXIT_CODE_MAX} (or OSMO's reserved 1001, 3000-3006, 4000)"
_DIGITS = re.compile(r"[0-9]+")


def check_name(value: object, field: str = "name") -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError("a name is required (a non-empty string)", field=field, value=value)
    if len(value) > NAME_MAX_LENGTH:
        raise ConfigError(f"is longer than {NAME_MAX_LENGTH} characters", field=field, value=value)
    if not CONFIG_NAME_RE.match(value):
        raise ConfigError(
            "must start with a letter, end with a letter or digit, and contain only letters, digits, '_', '.', '-'",
            field=field,
            value=value,
        )
    return value


def parse_timeout(value: object, field: str) -> timedelta | None:
    """`<int><unit>` (d, h, m, s, ms, us) or ISO 8601 (`PT2H`, `P1DT6H`); empty means inherit."""
    if value in (None, ""):
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ConfigError("must be a duration such as '2h', '30m', '7d' or ISO 8601 'PT2H'", field=field, value=value)
    if isinstance(value, int):
        return timeout_of(value, field, value)
    text = value.strip()
    short = _SHORT_TIMEOUT_RE.match(text)
    if short:
        return timeout_of(_number(short.group(1)) * _UNIT_SECONDS[short.group(2)], field, value)
    iso = _ISO_RE.match(text)
    if iso and text not in ("P", "PT") and not text.endswith("T"):
        parts = {k: _number(v) for k, v in iso.groupdict().items() if v}
        return timeout_of(sum(amount * _ISO_SECONDS[unit] for unit, amount in parts.items()), field, value)
    raise ConfigError(
        "is not a duration: use <integer><unit> with unit d, h, m, s, ms or us (e.g. '2h'), or ISO 8601 ('PT2H')",
        field=field,
        value=value,
    )


_ISO_SECONDS = {"weeks": 604800, "days": 86400, "hours": 3600, "minutes": 60, "seconds": 1}


def _number(digits: str) -> float:
    """A duration's amount; digits beyond any sane timeout only need to compare as large."""
    return float(digits) if len(digits) <= 30 else math.inf


def timeout_of(seconds: float, field: str, value: object) -> timedelta:
    """`seconds` as a timedelta, if longer than zero and at most MAX_TIMEOUT_DAYS (checked before building the
    timedelta, which overflows beyond 999999999 days)."""
    if not seconds > 0:  # also NaN
        raise ConfigError("must be longer than zero", field=field, value=value)
    if seconds > MAX_TIMEOUT.total_seconds():
        raise ConfigError(
            f"is longer than {MAX_TIMEOUT_DAYS} days, the longest timeout allowed", field=field, value=value
        )
    return timedelta(seconds=seconds)


def check_timeouts(timeouts: dict[str, object]) -> None:
    """Each default must not exceed its maximum (`default_exec_timeout` ≤ `max_exec_timeout`, same for queue)."""
    parsed = {key: parse_timeout(value, key) for key, value in timeouts.items()}
    for kind in ("exec", "queue"):
        default, maximum = parsed.get(f"default_{kind}_timeout"), parsed.get(f"max_{kind}_timeout")
        if default and maximum and default > maximum:
            raise ConfigError(
                f"is longer than max_{kind}_timeout ({timeouts[f'max_{kind}_timeout']})",
                field=f"default_{kind}_timeout",
                value=timeouts[f"default_{kind}_timeout"],
            )


def normalize_exit_actions(value: object, field: str = "default_exit_actions") -> dict[str, str]:
    """`{"COMPLETE"|"FAIL"|"RESCHEDULE": "0,1-10,16"}`; keys are case-insensitive, codes 0-255 and OSMO's
    reserved ones (1001, 3000-3006, 4000)."""
    if value in (None, ""):
        return {}
    if not isinstance(value, dict):
        raise ConfigError("must be a mapping of COMPLETE/FAIL/RESCHEDULE to exit codes", field=field, value=value)
    result: dict[str, str] = {}
    for key, codes in value.items():
        action = str(key).upper()
        if action not in EXIT_ACTION_KEYS:
            raise ConfigError(
                f"unknown exit action; expected one of {', '.join(EXIT_ACTION_KEYS)}", field=f"{field}.{key}", value=key
            )
        result[action] = _check_exit_codes(codes, f"{field}.{key}")
    return result


def _check_exit_codes(codes: object, field: str) -> str:
    if isinstance(codes, bool) or not isinstance(codes, (str, int)):
        raise ConfigError("must be a string of exit codes and ranges such as '0,1-10,16'", field=field, value=codes)
    if isinstance(codes, int) and not (0 <= codes <= _EXIT_CODE_MAX or _reserved(str(codes), "")):
        raise ConfigError(  # before str(): huge ints cannot be printed
            f"is {_OUTSIDE}",
            field=field,
            value=codes if codes.bit_length() < 64 else f"an integer of {codes.bit_length()} bits",
        )
    text = str(codes).replace(" ", "")
    for part in text.split(","):
        low, _, high = part.partition("-")
        if not _DIGITS.fullmatch(low) or (high and not _DIGITS.fullmatch(high)) or (part.endswith("-")):
            raise ConfigError(
                f"'{part[:40]}' is not an exit code or a range like '1-10'", field=field, value=_short(codes)
            )
        if (_code_too_big(low) or (high and _code_too_big(high))) and not _reserved(low, high):
            part = part if len(part) <= 40 else part[:37] + "..."
            raise ConfigError(f"'{part}' is {_OUTSIDE}", field=field, value=_short(codes))
        if high and int(high) < int(low):
            raise ConfigError(f"range '{part}' ends before it starts", field=field, value=_short(codes))
    return text


def _reserved(low: str, high: str) -> bool:
    """The codes low..high are all OSMO reserved ones (one block)."""
    if len(low.lstrip("0")) > 4 or len(high.lstrip("0")) > 4:
        return False
    first, last = int(low), int(high or low)
    return any(start <= first and last <= end for start, end in _OSMO_CODES)


def _code_too_big(digits: str) -> bool:
    return len(digits.lstrip("0")) > 3 or int(digits) > _EXIT_CODE_MAX


def _short(value: object) -> object:
    return value if not isinstance(value, str) or len(value) <= 80 else value[:77] + "..."


def expect_mapping(value: object, where: str) -> dict:
    """A document's mapping (JSON object); `where` names it in the error ("(document)" for the whole one)."""
    if not isinstance(value, dict):
        raise ConfigError(
            f"must be a mapping (JSON object), not {type(value).__name__}", field=where or "(document)", value=value
        )
    return dict(value)


def expect_str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"must be a string, not {type(value).__name__}", field=where, value=value)
    return value


def expect_bool(value: object, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError("must be true or false", field=where, value=value)
    return value


def expect_list(value: object, where: str) -> list:
    """A list (JSON array); null is an empty one."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(f"must be a list, not {type(value).__name__}", field=where or "(document)", value=value)
    return list(value)
