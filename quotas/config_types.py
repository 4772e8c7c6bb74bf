"""NODE_POOL: the config type the quotas app owns, described once (see configs.schema). One document per
node pool, its selector and its teams' quotas; `config show NODE_POOL gpu-a100` prints:

    {"backend": "sim",
     "selector": {"label": {"key": "nvidia.com/gpu.product", "value": "NVIDIA-A100-SXM4-80GB"}},
     "over_quota": true,
     "admission_seconds": null,
     "min_runtime_seconds": 600,
     "time_based_fair_share": {"window_days": 7, "half_life_hours": 24, "k": 1.0},
     "description": "",
     "departments": {"research": {"gpu": {"deserved": 16, "limit": null, "weight": 1}}},
     "projects": {"vision": {"gpu": {"deserved": 8, "limit": 12, "weight": 2, "lend": false}}}}

`selector` is `{}` (only the backend's Default node pool), `{"label": {"key", "value"}}` or
`{"platform": {"pool", "platform"}}`. A team or resource absent from `departments`/`projects` has the zero
quota (deserved 0, no limit, weight 1, lent when unused; `"lend": false` is "never lend": the team's unused
deserved is kept idle for it, never another team's over-quota share); snapshots leave zero quotas out, so a
document stays as short as the quotas that mean something. Amounts are integers in scheduler units (gpu
devices, cpu millicores, memory bytes) or Kubernetes quantities ("500m", "64Gi"), stored as integers.

`admission_seconds` (the periodic admission pass's period for this node pool) and `min_runtime_seconds`
(reclaim never stops a workflow admitted more recently) are null for the settings' defaults
(QUOTA_ADMISSION_SECONDS, QUOTA_MIN_RUNTIME_SECONDS), else bounded integers (ADMISSION_SECONDS,
MIN_RUNTIME_SECONDS).

`time_based_fair_share` (null: off) turns on KAI-Scheduler's time-based fair share in this node pool
(pools.engine.fairshare; docs/quotas.md, "Time-based fair share"): past usage over the last `window_days`
(WINDOW_DAYS, default 7), decayed with `half_life_hours` (HALF_LIFE_HOURS; null: no decay), moves the
over-quota split by `k` (K_BOUNDS, default 1.0, at most two decimals). `{}` reads as null; a block with any key
set is on, the others taking their defaults. Three nullable columns on the row, null together when off.

Checks that need no database are here (shape, negative values, limit < deserved); those that do (known
teams and pools, a department covering its projects, the Default's rules) are the handler's
(quotas.config_handlers). Descriptions only: no model import.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from configs.errors import ConfigError
from configs.kinds import INT_MAX, Bool, Group, Int, Kind, Reference, Text, reject_unknown
from configs.models import ConfigType
from configs.schema import Field, Schema
from configs.validators import check_name, expect_mapping, expect_str
from quotas import units

RESOURCES = ("gpu", "cpu", "memory")
ADMISSION_SECONDS = (1, 3600)  # a pass at least every hour; more often than the beat's tick is the tick
MIN_RUNTIME_SECONDS = (0, 7 * 24 * 3600)  # a week: longer would make borrowed capacity unreclaimable
WINDOW_DAYS = (1, 90)  # the usage record keeps raw attempts 90 days by default (USAGE_RAW_RETENTION_DAYS)
HALF_LIFE_HOURS = (1, 90 * 24)
K_BOUNDS = (Decimal("0"), Decimal("10"))  # KAI's kValue; 10 already lets 10% of past usage wipe a weight of 1/2
QUOTA_KEYS = ("deserved", "limit", "weight", "lend")
ZERO = {"deserved": 0, "limit": None, "weight": 1}  # what documents leave out
DEFAULT_QUOTA = {**ZERO, "lend": True}  # the same, every key said (what the doors show and a replace sets)


class Selector(Kind):
    """Which nodes a node pool holds: `{}`, `{"label": {"key", "value"}}` or `{"platform": {"pool", "platform"}}`.
    Parsed to a dict with `kind` and its two names; the model keeps them in columns (see `read`)."""

    on_row = False
    nullable = True

    def parse(self, value, where):
        body = expect_mapping(value, where)
        if not body:
            return {"kind": "default"}
        reject_unknown(body, {"label", "platform"}, where)
        if len(body) > 1:
            raise ConfigError("give either label or platform, not both", field=where, value=sorted(body))
        (kind, inner), keys = next(iter(body.items())), ("key", "value") if "label" in body else ("pool", "platform")
        at = f"{where}.{kind}"
        inner = expect_mapping(inner, at)
        reject_unknown(inner, set(keys), at)
        parsed = {"kind": kind}
        for key in keys:
            text = expect_str(inner.get(key, ""), f"{at}.{key}").strip()
            if not text and not (kind == "label" and key == "value"):
                raise ConfigError("is required (a non-empty string)", field=f"{at}.{key}", value=inner.get(key))
            parsed[key] = text
        if kind == "label" and (len(parsed["key"]) > 317 or len(parsed["value"]) > 63):
            raise ConfigError(
                "a label key is at most 317 characters and a value at most 63", field=at, value=parsed["key"]
            )
        return parsed

    def read(self, source, attr):
        if not hasattr(source, "selector_kind"):  # a Doc: the parsed dict
            return getattr(source, attr)
        if source.selector_kind == "label":
            return {"kind": "label", "key": source.label_key, "value": source.label_value}
        if source.selector_kind == "platform":
            return {"kind": "platform", "pool": source.pool_name, "platform": source.platform_name}
        return {"kind": "default"}

    def show(self, value):
        if value["kind"] == "label":
            return {"label": {"key": value["key"], "value": value["value"]}}
        if value["kind"] == "platform":
            return {"platform": {"pool": value["pool"], "platform": value["platform"]}}
        return {}


def seconds(bounds: tuple[int, int], meaning: str) -> Int:
    """Null (the settings' default) or whole seconds within `bounds`; the model declares the column."""
    low, high = bounds
    return Int(low, maximum=high, unit="seconds", why=meaning, null="the settings' default")


class Decimal2(Kind):
    """A number from `minimum` to `maximum` with at most two decimals (1, 1.5, 0.25): a Decimal once parsed
    (the model's DecimalField), a JSON number when shown."""

    def __init__(self, minimum: Decimal, maximum: Decimal, why: str) -> None:
        self.minimum, self.maximum, self.why = minimum, maximum, why

    def _reason(self) -> str:
        return f"must be a number from {self.minimum} to {self.maximum} with at most two decimals ({self.why})"

    def parse(self, value, where):
        number = None
        if not isinstance(value, bool) and isinstance(value, (int, float)):
            try:
                number = Decimal(str(value))
            except InvalidOperation:  # pragma: no cover - str() of an int or a float is always a number
                number = None
        fits = number is not None and number.is_finite() and self.minimum <= number <= self.maximum
        if not fits or number != number.quantize(Decimal("0.01")):
            raise ConfigError(self._reason(), field=where, value=value)
        return number.quantize(Decimal("0.01"))

    def show(self, value):
        return None if value is None else float(value)

    def form_messages(self, label):
        text = f"{label} {self._reason()}"
        return {"invalid": text, "min_value": text, "max_value": text, "max_decimal_places": text, "max_digits": text}


def _window_within_raw_retention(parsed: dict, where: str) -> None:
    """Usage is read from the raw record (quotas.services.usage_weights): a window longer than it keeps would read
    less than it says. The retention may shrink after (a restart): the pages then say what they count."""
    from django.conf import settings

    kept, days = settings.USAGE_RAW_RETENTION_DAYS, parsed["window_days"]
    if days > kept:
        raise ConfigError(
            f"must be at most {kept} days: the raw usage record keeps {kept} days (USAGE_RAW_RETENTION_DAYS),"
            " so a longer window would count less usage than it says",
            field=f"{where}.window_days",
            value=days,
        )


def time_based_fair_share() -> Group:
    """The `time_based_fair_share` block: null (off) or window, half-life and k, each a column of the row; the
    window at most what the raw usage record keeps (USAGE_RAW_RETENTION_DAYS)."""
    return Group(
        [
            Field(
                "window_days",
                Int(WINDOW_DAYS[0], maximum=WINDOW_DAYS[1], unit="days", why="how far back usage counts"),
                default=7,
                attr="fair_share_window_days",
                help="how far back usage counts, in days (1–90, at most USAGE_RAW_RETENTION_DAYS)",
            ),
            Field(
                "half_life_hours",
                Int(
                    HALF_LIFE_HOURS[0],
                    maximum=HALF_LIFE_HOURS[1],
                    unit="hours",
                    why="usage that old counts half",
                    null="no decay",
                ),
                default=None,
                attr="fair_share_half_life_hours",
                help="usage this many hours old counts half (1–2160); null: no decay within the window",
            ),
            Field(
                "k",
                Decimal2(*K_BOUNDS, "how strongly past usage moves the over-quota weights"),
                default=1.0,
                attr="fair_share_k",
                help="how strongly past usage moves the over-quota weights (0–10, two decimals)",
            ),
        ],
        nullable=True,
        checks=(_window_within_raw_retention,),
    )


class Quotas(Kind):
    """`{team: {resource: {deserved, limit, weight}}}` for departments or projects (`team_kind`). Parsed to
    the same shape with every amount an integer, zero quotas left out (they are what absence means)."""

    on_row = False
    nullable = True

    def __init__(self, team_kind: str) -> None:
        self.team_kind = team_kind

    def parse(self, value, where):
        teams = expect_mapping(value, where)
        parsed = {}
        for team, resources in teams.items():
            at = f"{where}.{team}"
            check_name(team, at)
            resources = expect_mapping(resources, at)
            reject_unknown(resources, set(RESOURCES), at)
            entry = {}
            for resource, quota in resources.items():
                one = parse_quota(resource, quota, f"{at}.{resource}")
                if one != ZERO:
                    entry[resource] = one
            # a team with only zero quotas is kept (its name is checked against the teams) and never shown
            parsed[team] = {resource: entry[resource] for resource in RESOURCES if resource in entry}
        return dict(sorted(parsed.items()))

    def read(self, source, attr):
        if not hasattr(source, "quotas"):  # a Doc: the parsed dict
            return getattr(source, attr)
        shown: dict[str, dict] = {}
        for quota in source.quotas.all():  # prefetched with their teams (quotas.config_handlers)
            team = quota.department if self.team_kind == "department" else quota.project
            if team is None or quota.is_zero:
                continue
            shown.setdefault(team.name, {})[quota.resource] = {
                "deserved": quota.deserved,
                "limit": quota.limit,
                "weight": quota.weight,
                **({} if quota.lend else {"lend": False}),
            }
        return {
            name: {resource: shown[name][resource] for resource in RESOURCES if resource in shown[name]}
            for name in sorted(shown)
        }

    def show(self, value):
        return {team: {res: dict(quota) for res, quota in entry.items()} for team, entry in value.items() if entry}


def parse_quota(resource: str, value: object, where: str) -> dict:
    """One `{deserved, limit, weight, lend}` (missing keys: 0, none, 1, true); limit ≥ deserved. `lend` is in
    the result only when false (never lend), so documents without it stay as they were."""
    quota = expect_mapping(value, where)
    reject_unknown(quota, set(QUOTA_KEYS), where)
    deserved = units.amount(resource, quota.get("deserved", 0), f"{where}.deserved")
    limit = quota.get("limit")
    if limit is not None:
        limit = units.amount(resource, limit, f"{where}.limit")
        if limit < deserved:
            raise ConfigError(
                f"is below deserved ({deserved}); a limit caps what a team may use, so it must be at least what "
                "it is guaranteed (or null for no limit)",
                field=f"{where}.limit",
                value=quota.get("limit"),
            )
    weight = quota.get("weight", 1)
    if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= INT_MAX:
        raise ConfigError(
            f"must be an integer ≥ 0 and ≤ {INT_MAX} (the share of the over-quota surplus)",
            field=f"{where}.weight",
            value=weight,
        )
    lend = quota.get("lend", True)
    if not isinstance(lend, bool):
        raise ConfigError(
            "must be true or false (false: its unused deserved is never lent to other teams)",
            field=f"{where}.lend",
            value=lend,
        )
    return {"deserved": deserved, "limit": limit, "weight": weight, **({} if lend else {"lend": False})}


NODE_POOL = Schema(
    ConfigType.NODE_POOL,
    kind_label="node pool",
    fields=(
        Field(
            "backend", Reference(), required="a node pool needs a backend (the name of the cluster its nodes are in)"
        ),
        Field("selector", Selector(), default={"kind": "default"}, help="{} (Default), label or platform"),
        Field("over_quota", Bool(), default=True, help="projects may borrow idle capacity beyond deserved"),
        Field(
            "admission_seconds",
            seconds(ADMISSION_SECONDS, "the periodic admission pass's period here"),
            default=None,
            help="seconds between periodic admission passes; empty: QUOTA_ADMISSION_SECONDS",
        ),
        Field(
            "min_runtime_seconds",
            seconds(MIN_RUNTIME_SECONDS, "reclaim never stops a workflow admitted more recently"),
            default=None,
            help="reclaim spares workflows admitted more recently; empty: QUOTA_MIN_RUNTIME_SECONDS",
        ),
        Field(
            "time_based_fair_share",
            time_based_fair_share(),
            attr=None,
            default=None,
            help="past usage moves the over-quota split: {window_days, half_life_hours, k}; null: off",
        ),
        Field("description", Text()),
        Field("departments", Quotas("department"), default={}),
        Field("projects", Quotas("project"), default={}),
    ),
)
