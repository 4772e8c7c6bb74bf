"""The pure engine: templates, variables, rules, gates and resolution. No Django, no network, no clock.

Typical use at config save and at submission:

    compiled = compile_platform(PlatformConfig(pool, platform, templates, rule_sets, pool_vars, platform_vars))
    problems = check_platform(compiled, nodes)          # list[EngineError]; store compiled.to_json()
    ...
    compiled = CompiledPlatform.from_json(stored)       # cached by content
    result = resolve(compiled, TaskInput(name="train", image="nvcr.io/x:1", resources={"gpu": 8}), ctx, nodes)
    result.pod, result.provenance, result.validation["ok"], result.to_dict()
"""

from pools.engine.defaults import (
    OSMO_DEFAULT_TEMPLATES,
    OSMO_DEFAULT_VALIDATIONS,
    OSMO_DEFAULT_VARIABLES,
    default_templates,
    default_validations,
)
from pools.engine.errors import EngineError
from pools.engine.gates import GateError, parse_volume_mount
from pools.engine.merge import PATCH, MergedTemplate, MergeError, merge, merge_templates
from pools.engine.platform import CompiledPlatform, PlatformConfig, compile_platform
from pools.engine.quantity import Quantity, QuantityError, parse_quantity
from pools.engine.resolve import Resolution, TaskInput, WorkflowContext, check_platform, resolve
from pools.engine.rules import (
    CompiledRules,
    NodeCapacity,
    NodeRulesVerdict,
    RuleError,
    RuleFailure,
    compile_rules,
    validate_rule_set,
)
from pools.engine.sandbox import SandboxError, UndefinedVariableError
from pools.engine.variables import (
    CompiledTemplate,
    Variable,
    VariableError,
    build_variables,
    k8s_name,
    referenced_variables,
)

__all__ = [
    "OSMO_DEFAULT_TEMPLATES",
    "OSMO_DEFAULT_VALIDATIONS",
    "OSMO_DEFAULT_VARIABLES",
    "PATCH",
    "CompiledPlatform",
    "CompiledRules",
    "CompiledTemplate",
    "EngineError",
    "GateError",
    "MergeError",
    "MergedTemplate",
    "NodeCapacity",
    "NodeRulesVerdict",
    "PlatformConfig",
    "Quantity",
    "QuantityError",
    "Resolution",
    "RuleError",
    "RuleFailure",
    "SandboxError",
    "TaskInput",
    "UndefinedVariableError",
    "Variable",
    "VariableError",
    "WorkflowContext",
    "build_variables",
    "check_platform",
    "compile_platform",
    "compile_rules",
    "default_templates",
    "default_validations",
    "k8s_name",
    "merge",
    "merge_templates",
    "parse_quantity",
    "parse_volume_mount",
    "referenced_variables",
    "resolve",
    "validate_rule_set",
]
