"""The pure engine: templates, variables, rules, gates and resolution. No Django, no network, no clock.

Typical use at config save and at submission:

    compiled = compile_platform(PlatformConfig(pool, platform, templates, rule_sets, pool_vars, platform_vars))
    problems = check_platform(compiled, nodes)          # list[EngineError]; store compiled.to_json()
    ...
    compiled = CompiledPlatform.from_json(stored)       # cached by content
    result = resolve(compiled, TaskInput(name="train", image="nvcr.io/x:1", resources={"gpu": 8}), ctx, nodes)
    result.pod, result.provenance, result.validation["ok"], result.to_dict()

The names below are loaded on first use (PEP 562): `import pools.engine`, or `from pools.engine import
quantity`, imports only what is asked for, so a command that needs quantities or fair shares does not load
the template sandbox (Jinja2) and the pod schema that compiling a platform needs (docs/performance.md, CLI).
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what static analysis sees; at run time `__getattr__` imports each on first use
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

# Each public name and the engine module that defines it.
_WHERE = {
    **dict.fromkeys(
        (
            "OSMO_DEFAULT_TEMPLATES",
            "OSMO_DEFAULT_VALIDATIONS",
            "OSMO_DEFAULT_VARIABLES",
            "default_templates",
            "default_validations",
        ),
        "defaults",
    ),
    "EngineError": "errors",
    **dict.fromkeys(("GateError", "parse_volume_mount"), "gates"),
    **dict.fromkeys(("PATCH", "MergedTemplate", "MergeError", "merge", "merge_templates"), "merge"),
    **dict.fromkeys(("CompiledPlatform", "PlatformConfig", "compile_platform"), "platform"),
    **dict.fromkeys(("Quantity", "QuantityError", "parse_quantity"), "quantity"),
    **dict.fromkeys(("Resolution", "TaskInput", "WorkflowContext", "check_platform", "resolve"), "resolve"),
    **dict.fromkeys(
        (
            "CompiledRules",
            "NodeCapacity",
            "NodeRulesVerdict",
            "RuleError",
            "RuleFailure",
            "compile_rules",
            "validate_rule_set",
        ),
        "rules",
    ),
    **dict.fromkeys(("SandboxError", "UndefinedVariableError"), "sandbox"),
    **dict.fromkeys(
        ("CompiledTemplate", "Variable", "VariableError", "build_variables", "k8s_name", "referenced_variables"),
        "variables",
    ),
}


def __getattr__(name: str):
    """A public name's value, importing its module the first time; a submodule's name is left to the import
    system (AttributeError makes `from pools.engine import schema` import `pools.engine.schema`)."""
    try:
        module = _WHERE[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Engine(types.ModuleType):
    """`merge` and `resolve` name both a function and the module that defines it. Importing the module sets
    the package's attribute to the module; as when the package imported everything at once, the name stays
    the function's (`from pools.engine import resolve` is the function, whichever was imported first)."""

    def __setattr__(self, name: str, value) -> None:
        if isinstance(value, types.ModuleType) and _WHERE.get(name) == name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Engine


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
