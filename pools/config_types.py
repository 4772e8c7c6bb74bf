"""POOL, POD_TEMPLATE and RESOURCE_VALIDATION: the config types the pools app owns, each described
once (OSMO JSON name, kind, default, model attribute, checks). Parsing, snapshots, diffs, row writes, the
admin forms, the API's body schemas and the model columns a description adds derive from these (see
configs.schema). What is particular to a type (loading references once per batch, recomputing pools,
naming referrers) is in its handler, pools.services.config_handlers.

Descriptions only: no model import, so pools.models can take its described columns from here. BACKEND is
described by the clusters app (clusters.config_types).
"""

from __future__ import annotations

from configs.errors import ConfigError
from configs.kinds import (
    Bool,
    Children,
    ExitActions,
    Group,
    Int,
    Kind,
    Mounts,
    OrderedRefs,
    Records,
    Reference,
    Text,
    Timeout,
    Unsupported,
    Variables,
    reject_unknown,
)
from configs.models import ConfigType
from configs.schema import Field, Schema
from configs.validators import check_timeouts, expect_list, expect_mapping
from pools.engine import CompiledTemplate, EngineError
from pools.engine.gates import check_template

TIMEOUT_FIELDS = ("default_exec_timeout", "default_queue_timeout", "max_exec_timeout", "max_queue_timeout")
POD_TEMPLATE_TOP_LEVEL = ("apiVersion", "kind", "metadata", "spec")
RULE_FIELDS = ("operator", "left_operand", "right_operand", "assert_message")
RULE_OPERATORS = ("GT", "GE", "LT", "LE", "EQ", "NE")


class PodManifest(Kind):
    """A pod template: a partial Pod manifest."""

    def parse(self, value, where):
        body = expect_mapping(value, where)
        unknown = sorted(set(body) - set(POD_TEMPLATE_TOP_LEVEL))
        if unknown:
            raise ConfigError(
                f"a pod template is a partial Pod manifest; allowed top-level fields are "
                f"{', '.join(POD_TEMPLATE_TOP_LEVEL)}",
                field=unknown[0],
                value=unknown[0],
            )
        for key in ("metadata", "spec"):
            if key in body and not isinstance(body[key], dict):
                raise ConfigError("must be a mapping", field=key, value=body[key])
        for refusal in check_template(body):  # the portal's labels, the GPU device selectors (docs/workflows.md)
            raise ConfigError(refusal.reason, field=refusal.field, value=refusal.value)
        check_templates(body, where)
        return body


def check_templates(value: object, where: str) -> None:
    """Every string of `value` compiles in the sandbox (bounded before it compiles, pools.engine
    .template_bounds): a template that does not is refused at its path when saved, not when a pool uses it."""
    try:
        CompiledTemplate(value)
    except EngineError as error:
        raise ConfigError.from_engine(error, where) from None


class Rules(Kind):
    """A resource validation: `[{operator, left_operand, right_operand, assert_message}, ...]`."""

    def parse(self, value, where):
        rules = expect_list(value, where)
        for index, rule in enumerate(rules):
            at = f"{where}[{index}]"
            rule = expect_mapping(rule, at)
            reject_unknown(rule, set(RULE_FIELDS), at)
            for key in RULE_FIELDS:
                if key not in rule:
                    raise ConfigError("is required", field=f"{at}.{key}", value=None)
                if isinstance(rule[key], bool) or not isinstance(rule[key], (str, int, float)):
                    raise ConfigError("must be a string or number", field=f"{at}.{key}", value=rule[key])
            if str(rule["operator"]).upper() not in RULE_OPERATORS:
                raise ConfigError(
                    f"unknown operator; expected one of {', '.join(RULE_OPERATORS)}",
                    field=f"{at}.operator",
                    value=rule["operator"],
                )
            check_templates({key: rule[key] for key in RULE_FIELDS if key != "operator"}, at)
        return [{**rule, "operator": str(rule["operator"]).upper()} for rule in rules]


def _templates() -> OrderedRefs:
    return OrderedRefs("template_refs", "template", ConfigType.POD_TEMPLATE, "pod template")


def _validations() -> OrderedRefs:
    return OrderedRefs("validation_refs", "validation", ConfigType.RESOURCE_VALIDATION, "resource validation")


def _gpu_within_maximum(gpu: dict, where: str) -> None:
    if gpu["maximum"] != -1 and gpu["guarantee"] > gpu["maximum"]:
        raise ConfigError(
            f"is larger than {where}.maximum ({gpu['maximum']})", field=f"{where}.guarantee", value=gpu["guarantee"]
        )


def _timeouts_in_order(doc) -> None:
    check_timeouts({key: getattr(doc, key) for key in TIMEOUT_FIELDS})


def _default_platform_is_a_platform(doc) -> None:
    names = [platform.name for platform in doc.platforms]
    if doc.default_platform and doc.default_platform not in names:
        raise ConfigError(
            f"is not a platform of this pool (platforms: {', '.join(names) or 'none'})",
            field="default_platform",
            value=doc.default_platform,
        )


PLATFORM = Schema(
    ConfigType.POOL,
    kind_label="platform",
    empty_body=True,
    warn_computed=False,
    computed=(
        "default_mounts",
        "labels",
        "tolerations",
        "parsed_pod_template",
        "parsed_resource_validations",
        "parsed_pod_template_for_accounting",
    ),
    renamed={"override_resource_validations": "resource_validations"},
    fields=(
        Field("description", Text()),
        Field("host_network_allowed", Bool(), default=False),
        Field("privileged_allowed", Bool(), default=False),
        Field("default_variables", Variables(), default={}),
        Field("resource_validations", _validations(), default=[]),
        Field("override_pod_template", _templates(), default=[]),
        Field("allowed_mounts", Mounts(), default=[]),
    ),
)

POOL = Schema(
    ConfigType.POOL,
    kind_label="pool",
    name_in_body=True,
    computed=(
        "status",
        "parsed_pod_template",
        "parsed_resource_validations",
        "parsed_group_templates",
        "parsed_pod_template_for_accounting",
        "last_heartbeat",
    ),
    retired={
        "action_permissions": "action_permissions was removed in OSMO 6.2 and is ignored; grant workflow "
        "actions with roles"
    },
    fields=(
        Field("description", Text()),
        Field("backend", Reference(), required="a pool needs a backend (the name of the cluster it runs on)"),
        Field("default_platform", Text(shown_empty_as_null=True), or_default=True),
        Field("download_type", Text(shown_empty_as_null=True), or_default=True),
        *(Field(key, Timeout()) for key in TIMEOUT_FIELDS),
        Field("default_exit_actions", ExitActions(), default={}),
        Field(
            "resources",
            Group(
                [
                    Field(
                        "gpu",
                        Group(
                            [
                                Field(
                                    "guarantee",
                                    Int(-1, "none"),
                                    default=-1,
                                    attr="gpu_guarantee",
                                    help="-1 = no guarantee",
                                ),
                                Field(
                                    "maximum",
                                    Int(-1, "unlimited"),
                                    default=-1,
                                    attr="gpu_maximum",
                                    help="-1 = unlimited",
                                ),
                                Field("weight", Int(0), default=1, attr="gpu_weight"),
                            ],
                            nullable=True,
                            checks=[_gpu_within_maximum],
                        ),
                        attr=None,
                        default=None,
                    )
                ]
            ),
            attr=None,
            default=None,
        ),
        Field("enable_maintenance", Bool(), default=False),
        Field("common_default_variables", Variables(), default={}),
        Field("common_resource_validations", _validations(), default=[]),
        Field("common_pod_template", _templates(), default=[]),
        Field(
            "common_group_templates",
            Unsupported("group templates are not supported yet; leave this list empty"),
            attr=None,
            default=[],
        ),
        Field("topology_keys", Records("key", "label"), default=[]),
        Field("platforms", Children(PLATFORM), default=[]),
    ),
    checks=(_timeouts_in_order, _default_platform_is_a_platform),
)


POD_TEMPLATE = Schema(ConfigType.POD_TEMPLATE, body=Field("body", PodManifest()), edit_format="yaml")
RESOURCE_VALIDATION = Schema(ConfigType.RESOURCE_VALIDATION, body=Field("rules", Rules()))
