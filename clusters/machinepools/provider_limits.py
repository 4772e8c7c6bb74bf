"""What ROSA and Karpenter accept in a machine pool, known before the provider refuses it (pure; issue #33).

The document's value kinds check the syntax every provider shares (an AWS zone, subnet or security group id, an
AWS tag, a Karpenter requirement, limits, disruption); `rosa_problem` and `karpenter_problem` then say what one
provider refuses for a given backend. Every bound names its source (docs/machine-pool-providers.md, "Limits"):

- ROSA's node caps: openshift/rosa `pkg/machinepool/helper.go` (commit 06370e89bbd70f915bef930fe2757f3b6d15ccb8,
  `validateClusterVersionWithMaxNodesLimit`): hosted control planes 500 (`hcpMaxNodesLimit`); classic 249
  (180 before OpenShift `ocm.ClassicMaxNodeSize249Support`).
- Multi-AZ: openshift/rosa `pkg/machinepool/machinepool.go` (commit 039e60200ba94a4dd7aa0c2d6d0b8d84cea5da11:
  "multi AZ clusters require that the number of MachinePool replicas be a multiple of 3", for replicas and
  for min and max), on a multi-AZ classic cluster.
- AWS tags: openshift/rosa `pkg/aws/helpers.go` (commit 1a07a4b322ba1d9e761d13d71eb90ab02a212f71, `UserTagKeyRE`
  `^[\\pL\\pZ\\pN_.:/=+\\-@]{1,128}$`, `UserTagValueRE` {0,256}, and `UserTagValidator`: unique keys, neither
  key nor value empty); at most 50 tags and no `aws:` prefix are AWS's own rules (AWS tagging, "Tag naming
  limits and requirements").
- Karpenter: kubernetes-sigs/karpenter `pkg/apis/v1/nodepool.go` (commit
  013941a7a8917c3879ec515b9317df48c6fb3317: requirements at most 100, `In` needs values, `Gt`/`Lt` one
  non-negative integer; budgets at most 50, `nodes` `^((100|[0-9]{1,2})%|[0-9]+)$`, `schedule` with
  `duration`, reasons Underutilized/Empty/Drifted; `consolidateAfter` `^(([0-9]+(s|m|h))+|Never)$`;
  consolidationPolicy WhenEmpty or WhenEmptyOrUnderutilized; static NodePools take only `limits.nodes`) and
  `pkg/apis/v1/labels.go` (restricted label domains and the well-known labels).
"""

from __future__ import annotations

import re
import unicodedata

from configs.errors import ConfigError
from configs.kinds import ListKind, MappingKind, reject_unknown
from configs.validators import expect_list, expect_mapping

# -- ROSA
ROSA_TOPOLOGIES = ("hcp", "classic")
ROSA_MAX_NODES = {"hcp": 500, "classic": 249}  # rosa pkg/machinepool/helper.go (see above)
ROSA_TOPOLOGY_LABEL = {"hcp": "ROSA with hosted control planes", "classic": "ROSA Classic"}
MULTI_AZ_ZONES = 3  # a multi-AZ ROSA cluster spans three availability zones
# AWS resource ids: the 8-digit form and the 17-digit one AWS has issued since 2016.
SUBNET_RE = re.compile(r"subnet-([0-9a-f]{8}|[0-9a-f]{17})")
SECURITY_GROUP_RE = re.compile(r"sg-([0-9a-f]{8}|[0-9a-f]{17})")
# A standard availability zone: region + letter (us-east-1a). Local and Wavelength zones are not machine
# pool zones for hosted control planes (rosa pkg/machinepool/helper.go, filterOutNonStandardZoneSubnets).
ZONE_RE = re.compile(r"(?P<region>[a-z]{2}(-gov)?-[a-z]+-[0-9]+)[a-z]")
REGION_RE = re.compile(r"[a-z]{2}(-gov)?-[a-z]+-[0-9]+")
# ROSA docs ("Additional custom security groups"): at most 10 additional security groups per machine pool.
MAX_SECURITY_GROUPS = 10
TAG_KEY_MAX, TAG_VALUE_MAX, MAX_TAGS = 128, 256, 50
TAG_SYMBOLS = set("_.:/=+-@")

# -- Karpenter (kubernetes-sigs/karpenter pkg/apis/v1)
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
MAX_REQUIREMENTS, MAX_BUDGETS = 100, 50
CONSOLIDATION_POLICIES = ("WhenEmpty", "WhenEmptyOrUnderutilized")
DISRUPTION_REASONS = ("Underutilized", "Empty", "Drifted")
CONSOLIDATE_AFTER_RE = re.compile(r"(([0-9]+(s|m|h))+|Never)")
BUDGET_NODES_RE = re.compile(r"((100|[0-9]{1,2})%|[0-9]+)")
BUDGET_SCHEDULE_RE = re.compile(
    r"(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))"
)
BUDGET_DURATION_RE = re.compile(r"((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)")
LIMIT_RESOURCES = ("cpu", "memory", "nvidia.com/gpu")
QUANTITY_RE = re.compile(r"(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[mkMGTPE])?")
ZONE_LABEL = "topology.kubernetes.io/zone"
# Keys the portal writes itself (from instance_type, spot, the pool's name and availability_zones).
PORTAL_REQUIREMENT_KEYS = {
    "node.kubernetes.io/instance-type": "instance_type",
    "karpenter.sh/capacity-type": "spot",
    "karpenter.sh/nodepool": "the machine pool's name",
    ZONE_LABEL: "availability_zones",
}
# labels.go: kubernetes.io and k8s.io are the kubelet's, karpenter.sh Karpenter's; allowed in them are the
# well-known labels and the node-restriction sub-domains; kubernetes.io/hostname never.
RESTRICTED_DOMAINS = ("kubernetes.io", "k8s.io", "karpenter.sh")
DOMAIN_EXCEPTIONS = ("kops.k8s.io", "node.kubernetes.io", "node-restriction.kubernetes.io")
WELL_KNOWN_LABELS = (
    "topology.kubernetes.io/region",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "node.kubernetes.io/windows-build",
)
RESTRICTED_LABELS = ("kubernetes.io/hostname",)


def _unique(items: list, where: str, what: str) -> None:
    seen = set()
    for index, item in enumerate(items):
        if item in seen:
            raise ConfigError(f"{what} {item} is given twice; give each once", field=f"{where}[{index}]", value=item)
        seen.add(item)


class _IdList(ListKind):
    """A list of AWS names or ids matching `pattern`, each once, at most `most`."""

    pattern: re.Pattern
    reason = ""
    most = 0
    what = ""

    def parse(self, value, where):
        items = expect_list(value, where)
        if self.most and len(items) > self.most:
            raise ConfigError(f"has {len(items)} {self.what}s; at most {self.most}", field=where, value=len(items))
        for index, item in enumerate(items):
            if not isinstance(item, str) or not self.pattern.fullmatch(item):
                raise ConfigError(self.reason, field=f"{where}[{index}]", value=item)
        _unique(items, where, self.what)
        return items


class Zones(_IdList):
    """AWS availability zones (`["us-east-1a", "us-east-1b", "us-east-1c"]`); empty: the cluster's own."""

    pattern, what, most = ZONE_RE, "availability zone", 6
    example = '["us-east-1a", "us-east-1b", "us-east-1c"]'
    reason = "must be an AWS availability zone name such as us-east-1a (region and zone letter)"


class Subnets(_IdList):
    pattern, what, most = SUBNET_RE, "subnet", 6
    example = '["subnet-0a1b2c3d4e5f60718"]'
    reason = "must be an AWS subnet id: subnet- and 8 or 17 hexadecimal digits"


class SecurityGroups(_IdList):
    pattern, what, most = SECURITY_GROUP_RE, "security group", MAX_SECURITY_GROUPS
    example = '["sg-0a1b2c3d4e5f60718"]'
    reason = "must be an AWS security group id: sg- and 8 or 17 hexadecimal digits"


def _tag_text_ok(text: str) -> bool:
    """rosa's UserTagKeyRE/UserTagValueRE characters: Unicode letters, separators and numbers, and _.:/=+-@."""
    return all(unicodedata.category(c)[0] in "LZN" or c in TAG_SYMBOLS for c in text)


class AwsTags(MappingKind):
    """AWS tags on the pool's instances (`{"cost-center": "ml"}`), as rosa checks them."""

    example = '{"cost-center": "ml-research"}'

    def parse(self, value, where):
        tags = expect_mapping(value, where)
        if len(tags) > MAX_TAGS:
            raise ConfigError(f"has {len(tags)} tags; AWS allows at most {MAX_TAGS}", field=where, value=len(tags))
        for key, item in tags.items():
            at = f"{where}.{key}"
            if not key or len(key) > TAG_KEY_MAX or not _tag_text_ok(key):
                raise ConfigError(
                    f"a tag key is 1 to {TAG_KEY_MAX} letters, digits, spaces or _.:/=+-@ (rosa's UserTagKeyRE)",
                    field=at,
                    value=key,
                )
            if key.lower().startswith("aws:"):
                raise ConfigError("the aws: prefix is reserved for AWS's own tags", field=at, value=key)
            if not isinstance(item, str) or not item or len(item) > TAG_VALUE_MAX or not _tag_text_ok(item):
                raise ConfigError(
                    f"a tag value is 1 to {TAG_VALUE_MAX} letters, digits, spaces or _.:/=+-@ (rosa's "
                    "UserTagValueRE; rosa refuses an empty value)",
                    field=at,
                    value=item,
                )
        return dict(sorted(tags.items()))

    def show(self, value):
        return dict(sorted(value.items()))


def requirement_key_problem(key: str) -> str:
    """Why Karpenter refuses `key` in a NodePool requirement ("" if it takes it)."""
    if key in PORTAL_REQUIREMENT_KEYS:
        return f"is written by the portal from {PORTAL_REQUIREMENT_KEYS[key]}; set that instead"
    if key in RESTRICTED_LABELS:
        return "is restricted by Karpenter (it would interfere with its provisioning)"
    domain = key.rpartition("/")[0]
    if key in WELL_KNOWN_LABELS or not domain:
        return ""
    if any(domain == d or domain.endswith("." + d) for d in DOMAIN_EXCEPTIONS):
        return ""
    if any(domain == d or domain.endswith("." + d) for d in RESTRICTED_DOMAINS):
        return (
            f"is in a domain Karpenter restricts ({', '.join(RESTRICTED_DOMAINS)}); only its well-known labels "
            f"({', '.join(WELL_KNOWN_LABELS)}) and node.kubernetes.io/ are allowed there"
        )
    return ""


class Requirements(ListKind):
    """Karpenter NodePool requirements beyond the portal's own: `[{"key", "operator", "values"}]`."""

    example = '[{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["4"]}]'

    def parse(self, value, where):
        from clusters.machinepools.syntax import label_key_problem, label_value_problem

        items = expect_list(value, where)
        if len(items) > MAX_REQUIREMENTS:
            raise ConfigError(
                f"has {len(items)} requirements; Karpenter allows at most {MAX_REQUIREMENTS}", field=where,
                value=len(items),
            )  # fmt: skip
        parsed = []
        for index, item in enumerate(items):
            at = f"{where}[{index}]"
            item = expect_mapping(item, at)
            reject_unknown(item, {"key", "operator", "values"}, at)
            key, operator, values = item.get("key"), item.get("operator"), item.get("values", [])
            problem = label_key_problem(key) or requirement_key_problem(key)
            if problem:
                raise ConfigError(problem, field=f"{at}.key", value=key)
            if operator not in OPERATORS:
                raise ConfigError(f"must be one of {', '.join(OPERATORS)}", field=f"{at}.operator", value=operator)
            values = expect_list(values, f"{at}.values")
            for number, text in enumerate(values):
                problem = label_value_problem(text)
                if problem:
                    raise ConfigError(problem, field=f"{at}.values[{number}]", value=text)
            if operator in ("In", "NotIn") and not values:
                raise ConfigError(f"operator {operator} needs at least one value", field=f"{at}.values", value=[])
            if operator in ("Exists", "DoesNotExist") and values:
                raise ConfigError(f"operator {operator} takes no values", field=f"{at}.values", value=values)
            if operator in ("Gt", "Lt") and (len(values) != 1 or not values[0].isdigit()):
                raise ConfigError(
                    f"operator {operator} takes a single non-negative integer value", field=f"{at}.values",
                    value=values,
                )  # fmt: skip
            parsed.append({"key": key, "operator": operator, "values": values})
        return parsed


class NodePoolLimits(MappingKind):
    """Karpenter `spec.limits` beyond `nodes` (which is max_replicas): `{"cpu", "memory", "nvidia.com/gpu"}`
    as Kubernetes quantities; unset resources are max_replicas nodes of the instance type."""

    example = '{"cpu": "256", "memory": "1024Gi", "nvidia.com/gpu": "16"}'

    def parse(self, value, where):
        limits = expect_mapping(value, where)
        for resource, quantity in limits.items():
            at = f"{where}.{resource}"
            if resource not in LIMIT_RESOURCES:
                raise ConfigError(
                    f"unknown resource; limits take {', '.join(LIMIT_RESOURCES)} (nodes is max_replicas)",
                    field=at, value=resource,
                )  # fmt: skip
            text = str(quantity) if isinstance(quantity, int) and not isinstance(quantity, bool) else quantity
            if not isinstance(text, str) or not QUANTITY_RE.fullmatch(text) or not re.search(r"[1-9]", text):
                raise ConfigError(
                    'must be a positive Kubernetes quantity such as "64", "500m" or "256Gi"', field=at, value=quantity
                )
            limits[resource] = text
        return dict(sorted(limits.items()))

    def show(self, value):
        return dict(sorted(value.items()))


class Disruption(MappingKind):
    """Karpenter `spec.disruption` in its own names: `consolidationPolicy`, `consolidateAfter`, `budgets`; empty:
    the portal's default (WhenEmpty after 30s)."""

    example = '{"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m", "budgets": [{"nodes": "10%"}]}'

    def parse(self, value, where):
        disruption = expect_mapping(value, where)
        reject_unknown(disruption, {"consolidationPolicy", "consolidateAfter", "budgets"}, where)
        policy = disruption.get("consolidationPolicy")
        if policy is not None and policy not in CONSOLIDATION_POLICIES:
            raise ConfigError(
                f"must be one of {', '.join(CONSOLIDATION_POLICIES)}",
                field=f"{where}.consolidationPolicy",
                value=policy,
            )
        after = disruption.get("consolidateAfter")
        if after is not None and (not isinstance(after, str) or not CONSOLIDATE_AFTER_RE.fullmatch(after)):
            raise ConfigError(
                'must be a duration in s, m or h ("30s", "1h30m") or "Never"', field=f"{where}.consolidateAfter",
                value=after,
            )  # fmt: skip
        if "budgets" in disruption:
            disruption["budgets"] = _budgets(disruption["budgets"], f"{where}.budgets")
        return disruption


def _budgets(value, where) -> list[dict]:
    budgets = expect_list(value, where)
    if len(budgets) > MAX_BUDGETS:
        raise ConfigError(f"has {len(budgets)} budgets; Karpenter allows at most {MAX_BUDGETS}", field=where,
                          value=len(budgets))  # fmt: skip
    for index, budget in enumerate(budgets):
        at = f"{where}[{index}]"
        budget = expect_mapping(budget, at)
        reject_unknown(budget, {"nodes", "schedule", "duration", "reasons"}, at)
        nodes = budget.get("nodes")
        if not isinstance(nodes, str) or not BUDGET_NODES_RE.fullmatch(nodes):
            raise ConfigError('must be a node count ("5") or a percentage up to 100% ("10%")', field=f"{at}.nodes",
                              value=nodes)  # fmt: skip
        if ("schedule" in budget) != ("duration" in budget):
            raise ConfigError("'schedule' must be set with 'duration'", field=f"{at}.schedule",
                              value=budget.get("schedule"))  # fmt: skip
        schedule, duration = budget.get("schedule"), budget.get("duration")
        if schedule is not None and (not isinstance(schedule, str) or not BUDGET_SCHEDULE_RE.fullmatch(schedule)):
            raise ConfigError('must be a cron schedule ("0 9 * * mon-fri") or @daily, @hourly, …',
                              field=f"{at}.schedule", value=schedule)  # fmt: skip
        if duration is not None and (not isinstance(duration, str) or not BUDGET_DURATION_RE.fullmatch(duration)):
            raise ConfigError('must be a duration in hours and minutes ("8h", "1h30m")', field=f"{at}.duration",
                              value=duration)  # fmt: skip
        reasons = expect_list(budget.get("reasons", []), f"{at}.reasons")
        for number, reason in enumerate(reasons):
            if reason not in DISRUPTION_REASONS:
                raise ConfigError(f"must be one of {', '.join(DISRUPTION_REASONS)}", field=f"{at}.reasons[{number}]",
                                  value=reason)  # fmt: skip
        budgets[index] = budget
    return budgets


# -- per provider: what it refuses given the backend (`doc` is a MACHINE_POOL Doc or a row with its fields)


def most_nodes(pool) -> int:
    return pool.max_replicas if pool.autoscaling else pool.replicas


def rosa_problem(doc, topology: str, region: str, other_nodes: int) -> ConfigError | None:
    """What ROSA refuses in `doc` on a cluster of `topology` in `region` whose other machine pools may have
    `other_nodes` nodes together."""
    label, cap = ROSA_TOPOLOGY_LABEL[topology], ROSA_MAX_NODES[topology]
    for name in ("requirements", "limits", "disruption"):
        if getattr(doc, name):
            return ConfigError(
                "is Karpenter's (a NodePool's); ROSA machine pools have none: leave it empty", field=name,
                value=getattr(doc, name),
            )  # fmt: skip
    scaling = doc.autoscaling
    for where, count in (
        (("autoscaling.max_replicas", doc.max_replicas), ("autoscaling.min_replicas", doc.min_replicas))
        if scaling
        else (("replicas", doc.replicas),)
    ):
        if count > cap:
            return ConfigError(
                f"{label} allows at most {cap} nodes per cluster (the rosa CLI's limit)", field=where, value=count
            )
    if most_nodes(doc) + other_nodes > cap:
        return ConfigError(
            f"the cluster's other machine pools may have {other_nodes} nodes; with {most_nodes(doc)} more it would "
            f"exceed {label}'s {cap} nodes per cluster",
            field="autoscaling.max_replicas" if scaling else "replicas",
            value=most_nodes(doc),
        )
    zones, subnets = list(doc.availability_zones), list(doc.subnets)
    if region:
        for index, zone in enumerate(zones):
            if ZONE_RE.fullmatch(zone).group("region") != region:
                return ConfigError(
                    f"is not in the cluster's region {region}", field=f"availability_zones[{index}]", value=zone
                )
    if len(subnets) > 1:
        return ConfigError(
            "a ROSA machine pool takes one subnet (a single-AZ pool); leave it empty for the cluster's own",
            field="subnets",
            value=subnets,
        )
    if topology == "hcp" and len(zones) > 1:
        return ConfigError(
            "a machine pool of ROSA with hosted control planes lives in one availability zone (one subnet)",
            field="availability_zones",
            value=zones,
        )
    if len(zones) not in (0, 1, MULTI_AZ_ZONES):
        return ConfigError(
            f"a ROSA machine pool is single-AZ (one zone) or multi-AZ (the cluster's {MULTI_AZ_ZONES} zones)",
            field="availability_zones",
            value=zones,
        )
    if subnets and len(zones) > 1:
        return ConfigError(
            "a subnet makes a single-AZ machine pool; give one zone or none", field="availability_zones", value=zones
        )
    if len(zones) == MULTI_AZ_ZONES:
        counts = (
            (("autoscaling.min_replicas", doc.min_replicas), ("autoscaling.max_replicas", doc.max_replicas))
            if scaling
            else (("replicas", doc.replicas),)
        )
        for where, count in counts:
            if count % MULTI_AZ_ZONES:
                return ConfigError(
                    f"a multi-AZ machine pool ({MULTI_AZ_ZONES} zones) needs a multiple of {MULTI_AZ_ZONES} "
                    "(multi AZ clusters require that the number of MachinePool replicas be a multiple of 3)",
                    field=where,
                    value=count,
                )
    return None


def karpenter_problem(doc) -> ConfigError | None:
    """What a Karpenter NodePool cannot carry: the EC2NodeClass holds subnets, security groups and tags; a
    static NodePool takes no resource limits (only limits.nodes)."""
    for name, selector in (
        ("subnets", "subnetSelectorTerms"),
        ("security_groups", "securityGroupSelectorTerms"),
        ("aws_tags", "tags"),
    ):
        if getattr(doc, name):
            return ConfigError(
                f"on Karpenter this is the EC2NodeClass's ({selector}), not the NodePool's: leave it empty",
                field=name,
                value=getattr(doc, name),
            )
    if doc.limits and not doc.autoscaling:
        return ConfigError(
            "only 'limits.nodes' is supported on static NodePools (fixed replicas): leave limits empty",
            field="limits",
            value=doc.limits,
        )
    return None
