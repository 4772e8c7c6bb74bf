"""The value kinds of MACHINE_POOL documents (configs.kinds vocabulary): how a machine pool's scaling, labels,
taints, spot price and disk are read from a document (errors naming field, value and reason), shown again,
and found on a model object or a parsed Doc (clusters.config_types describes the type with them)."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from django.core.validators import MinValueValidator

from clusters.machinepools.spec import CAPACITY_TYPE_LABEL, INSTANCE_TYPE_LABEL, MACHINEPOOL_LABEL
from clusters.machinepools.syntax import label_key_problem, label_value_problem, taint_effect_problem
from configs.errors import ConfigError
from configs.kinds import Group, Int, Kind, ListKind, MappingKind, reject_unknown
from configs.schema import Field
from configs.validators import expect_list, expect_mapping

# ROSA's root volume limits for a worker machine pool (GiB): the OpenShift Cluster Manager console refuses
# below 128 and above 16 TiB (OpenShift 4.14 and later) and proposes 300 (uhc-portal, the rosa wizard's
# constants: workerNodeVolumeSizeMinGiB = 128, getWorkerNodeVolumeSizeMaxGiB = 16 * 1024, default 300).
DISK_MIN_GIB, DISK_MAX_GIB, DISK_DEFAULT_GIB = 128, 16384, 300
# Labels the portal puts on every node of a machine pool itself (clusters.machinepools.spec).
RESERVED_LABELS = (MACHINEPOOL_LABEL, INSTANCE_TYPE_LABEL, CAPACITY_TYPE_LABEL)
PRICE_MAX = Decimal("999999.9999")  # the column's 10 digits, 4 after the point
# The most nodes one machine pool may have: ROSA's most for a cluster with hosted control planes (uhc-portal's
# MAX_NODES_HCP; classic clusters stop at 249), so no document asks the cloud for more than it can give.
MAX_REPLICAS = 500
# What one machine pool's nodes may carry (docs/limits.md): each node copies them, and ten thousand taints
# took a 31 s write.
MAX_LABELS, MAX_TAINTS = 100, 100


class Replicas(Int):
    """A fixed node count from 0 to MAX_REPLICAS, or null when the pool autoscales (then it is not shown)."""

    nullable = True

    def __init__(self) -> None:
        super().__init__(0, maximum=MAX_REPLICAS)

    def read(self, source, attr):
        return None if source.autoscaling else source.replicas


class Autoscaling(Group):
    """`{"min_replicas", "max_replicas"}` (min 0 = scale to zero), stored in the row's two columns and the
    `autoscaling` flag; null when the pool has a fixed `replicas`."""

    def __init__(self) -> None:
        super().__init__(
            (
                Field("min_replicas", Int(0, maximum=MAX_REPLICAS), default=0, help="0 = scale to zero."),
                Field(
                    "max_replicas",
                    Int(1, maximum=MAX_REPLICAS),
                    required="autoscaling needs max_replicas, the most nodes the pool may have (at least 1)",
                ),
            ),
            nullable=True,
            checks=(_min_not_above_max,),
        )

    def show_from(self, source):
        if not source.autoscaling:
            return None
        return {"min_replicas": source.min_replicas, "max_replicas": source.max_replicas}


def _check_count(items, most: int, what: str, where: str) -> None:
    if len(items) > most:
        raise ConfigError(
            f"has {len(items)} {what}; a machine pool may have at most {most}", field=where, value=len(items)
        )


def _min_not_above_max(parsed: dict, where: str) -> None:
    if parsed["min_replicas"] > parsed["max_replicas"]:
        raise ConfigError(
            f"is above max_replicas ({parsed['max_replicas']}); the pool scales between the two",
            field=f"{where}.min_replicas",
            value=parsed["min_replicas"],
        )


class Labels(MappingKind):
    """Node labels `{key: value}` in Kubernetes label syntax; the labels the portal sets itself are refused."""

    example = '{"node-type": "gpu"}'

    def parse(self, value, where):
        labels = expect_mapping(value, where)
        _check_count(labels, MAX_LABELS, "labels", where)
        for key, item in labels.items():
            at = f"{where}.{key}"
            problem = label_key_problem(key) or label_value_problem(item)
            if problem:
                raise ConfigError(problem, field=at, value=item if not label_key_problem(key) else key)
            if key in RESERVED_LABELS:
                raise ConfigError(
                    "is set by the portal on every node of a machine pool; choose another key", field=at, value=key
                )
        return dict(sorted(labels.items()))

    def show(self, value):
        return dict(sorted(value.items()))


class Taints(ListKind):
    """`[{"key", "value", "effect"}]`: key in label-key syntax, value a label value ("" allowed), effect
    NoSchedule, PreferNoSchedule or NoExecute; one taint per key and effect (as Kubernetes has it)."""

    example = '[{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]'

    def parse(self, value, where):
        taints, seen = [], set()
        _check_count(expect_list(value, where), MAX_TAINTS, "taints", where)
        for index, item in enumerate(expect_list(value, where)):
            at = f"{where}[{index}]"
            item = expect_mapping(item, at)
            if "schedule_type" in item:  # the ROSA Terraform provider's word for it
                raise ConfigError("unknown field; a taint's effect is called effect", field=f"{at}.schedule_type",
                                  value=item["schedule_type"])  # fmt: skip
            reject_unknown(item, {"key", "value", "effect"}, at)
            taint = {"key": item.get("key"), "value": item.get("value", ""), "effect": item.get("effect")}
            for part, problem in (
                ("key", label_key_problem(taint["key"])),
                ("value", label_value_problem(taint["value"])),
                ("effect", taint_effect_problem(taint["effect"])),
            ):
                if problem:
                    raise ConfigError(problem, field=f"{at}.{part}", value=taint[part])
            if (taint["key"], taint["effect"]) in seen:
                raise ConfigError(
                    f"a second taint with key {taint['key']} and effect {taint['effect']}; give each once",
                    field=f"{at}.key",
                    value=taint["key"],
                )
            seen.add((taint["key"], taint["effect"]))
            taints.append(taint)
        return taints


class Price(Kind):
    """A spot max price, USD per hour: a positive decimal ("0.35" or 0.35), at most 4 decimals; null or ""
    for none (capped at the on-demand price). Shown as a string, as the seed's `gpu_spot_max_price`."""

    nullable = True
    REASON = 'must be a price in USD per hour: a positive decimal such as "0.35" (at most 4 decimals), or null'

    def parse(self, value, where):
        if value == "":
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float, Decimal)):
            raise ConfigError(self.REASON, field=where, value=value)
        try:
            price = Decimal(str(value).strip())
        except InvalidOperation:
            raise ConfigError(self.REASON, field=where, value=value) from None
        if not price.is_finite() or price <= 0 or price > PRICE_MAX or price.as_tuple().exponent < -4:
            raise ConfigError(self.REASON, field=where, value=value)
        return price

    def show(self, value):
        return None if value is None else format(Decimal(value).normalize(), "f")

    def from_form(self, value):
        return self.show(value)

    def form_messages(self, label):
        return {"invalid": f"{label} must be a price in USD per hour, e.g. 0.35"}

    def form_validators(self, label):
        text = f"{label} must be a positive price in USD per hour, e.g. 0.35"
        return [MinValueValidator(Decimal("0.0001"), message=text)]


class DiskSize(Int):
    """The root volume in GiB, within ROSA's limits."""

    def __init__(self) -> None:
        super().__init__(DISK_MIN_GIB, maximum=DISK_MAX_GIB, unit="GiB", why="ROSA's root volume limits")
