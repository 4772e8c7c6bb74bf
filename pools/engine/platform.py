"""A platform's configuration compiled once at config save: merged template, compiled strings, parsed rules.

`PlatformConfig` is plain data the Django layer builds from the DB; `compile_platform` merges, compiles and
parses everything once and raises EngineError (path + reason) for a bad config. `CompiledPlatform.to_json`
is storable in a JSONField; `CompiledPlatform.from_json` rebuilds it cheaply (cached by content) and compiles
the template strings and rules lazily on first use.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property

from pools.engine.errors import EngineError
from pools.engine.gates import container_mount_paths, host_paths, normalize_mounts
from pools.engine.merge import MergedTemplate, merge_templates_traced
from pools.engine.rules import CompiledRules, compile_rules
from pools.engine.variables import CompiledTemplate, Variable, check_variable_names, layer_defaults
from portal.json_paths import json_copy

__all__ = ["JSON_FORMAT", "CompiledPlatform", "Origin", "PlatformConfig", "compile_platform"]

JSON_FORMAT = 1
_FROM_JSON_CACHE_SIZE = 256


@dataclass(frozen=True)
class Origin:
    """Where a leaf of a resolved pod comes from: a template (and the variables it read), the task, the system
    (and, for a value the system takes from a setting, which one)."""

    source: str
    template: str = ""
    variables: tuple[str, ...] = ()
    setting: str = ""


TASK = Origin("task")
SYSTEM = Origin("system")


@dataclass
class PlatformConfig:
    pool: str
    platform: str
    templates: list[tuple[str, dict]] = field(default_factory=list)  # pool common, then platform override
    rule_sets: list[tuple[str, list[dict]]] = field(default_factory=list)  # pool's, then platform's
    pool_variables: dict = field(default_factory=dict)
    platform_variables: dict = field(default_factory=dict)
    host_network_allowed: bool = False
    privileged_allowed: bool = False
    allowed_mounts: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "pool": self.pool,
            "platform": self.platform,
            "templates": [[name, json_copy(body)] for name, body in self.templates],
            "rule_sets": [[name, json_copy(rules)] for name, rules in self.rule_sets],
            "pool_variables": json_copy(self.pool_variables),
            "platform_variables": json_copy(self.platform_variables),
            "host_network_allowed": self.host_network_allowed,
            "privileged_allowed": self.privileged_allowed,
            "allowed_mounts": list(self.allowed_mounts),
        }

    @classmethod
    def from_json(cls, data: dict) -> PlatformConfig:
        return cls(
            pool=data["pool"],
            platform=data["platform"],
            templates=[(name, body) for name, body in data.get("templates", [])],
            rule_sets=[(name, rules) for name, rules in data.get("rule_sets", [])],
            pool_variables=dict(data.get("pool_variables") or {}),
            platform_variables=dict(data.get("platform_variables") or {}),
            host_network_allowed=bool(data.get("host_network_allowed", False)),
            privileged_allowed=bool(data.get("privileged_allowed", False)),
            allowed_mounts=list(data.get("allowed_mounts") or []),
        )


def _template_origin(label: object, refs: frozenset[str]) -> Origin:
    return Origin("template", str(label or ""), tuple(sorted(refs)))


def _literal_container_names(body: dict) -> tuple[str, ...]:
    """Names of template containers that are fixed text (the user container's name is a template)."""
    spec = body.get("spec") if isinstance(body, dict) else None
    names = []
    for list_name in ("initContainers", "containers"):
        items = spec.get(list_name) if isinstance(spec, dict) else None
        for container in items if isinstance(items, list) else ():
            name = container.get("name") if isinstance(container, dict) else None
            if isinstance(name, str) and "{{" not in name and "{%" not in name:
                names.append(name)
    return tuple(names)


class CompiledPlatform:
    """Everything per platform that does not depend on the task. Build with compile_platform or from_json."""

    def __init__(
        self,
        config: PlatformConfig,
        merged: MergedTemplate,
        *,
        origins: object = None,
        warnings: list[str] | None = None,
    ) -> None:
        self.config = config
        self.merged = merged
        self._origins = origins
        self.warnings: list[str] = list(warnings or [])

    # -- derived, task-independent facts (OSMO's computed platform fields)
    @cached_property
    def node_selector(self) -> dict:
        spec = self.merged.body.get("spec")
        selector = spec.get("nodeSelector") if isinstance(spec, dict) else None
        return dict(selector) if isinstance(selector, dict) else {}

    @cached_property
    def tolerations(self) -> list:
        spec = self.merged.body.get("spec")
        tolerations = spec.get("tolerations") if isinstance(spec, dict) else None
        return json_copy(tolerations) if isinstance(tolerations, list) else []

    @cached_property
    def default_mounts(self) -> list[str]:
        return container_mount_paths(self.merged.body)

    @cached_property
    def template_containers(self) -> tuple[str, ...]:
        return _literal_container_names(self.merged.body)

    @cached_property
    def template_host_paths(self) -> set[str]:
        return host_paths(self.merged.body)

    # -- compiled once, lazily when built from JSON
    @cached_property
    def default_variables(self) -> dict[str, Variable]:
        return layer_defaults(self.config.pool_variables, self.config.platform_variables)

    @cached_property
    def template(self) -> CompiledTemplate:
        return CompiledTemplate(self.merged.body)

    @cached_property
    def template_origins(self) -> object:
        origins = self._origins if self._origins is not None else self.merged.origin_tree()
        return self.template.annotate(origins, _template_origin)

    @cached_property
    def rules(self) -> CompiledRules:
        return compile_rules(self.config.rule_sets)

    def to_json(self) -> dict:
        config = self.config.to_json()
        return {
            "format": JSON_FORMAT,
            "fingerprint": _fingerprint(config),
            "config": config,
            # the origin tree, not the flat {leaf path: template} map: a label covers a whole subtree, so it is
            # smaller and costs no path strings at config save; `sources` is built from it when read. Shared,
            # not copied: nothing mutates an origin tree (annotating one builds another).
            "merged": {"body": json_copy(self.merged.body), "origins": self.merged.origins()},
            "node_selector": self.node_selector,
            "tolerations": self.tolerations,
            "default_mounts": self.default_mounts,
            "warnings": list(self.warnings),
        }

    @classmethod
    def from_json(cls, data: dict) -> CompiledPlatform:
        if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
            raise EngineError(
                f"not a compiled platform (format {JSON_FORMAT})",
                field="format",
                value=data.get("format") if isinstance(data, dict) else None,
            )
        key = data.get("fingerprint") or _fingerprint(data["config"])
        cached = _FROM_JSON_CACHE.get(key)
        if cached is not None:
            _FROM_JSON_CACHE.move_to_end(key)
            return cached
        stored = data["merged"]
        if "origins" in stored:
            merged = MergedTemplate(stored["body"], origins=stored["origins"])
        else:  # stored before the origin tree was (a flat sources map)
            merged = MergedTemplate(stored["body"], dict(stored["sources"]))
        compiled = cls(
            PlatformConfig.from_json(data["config"]), merged, origins=merged.origins(), warnings=data.get("warnings")
        )
        _FROM_JSON_CACHE[key] = compiled
        if len(_FROM_JSON_CACHE) > _FROM_JSON_CACHE_SIZE:
            _FROM_JSON_CACHE.popitem(last=False)
        return compiled


_FROM_JSON_CACHE: OrderedDict[str, CompiledPlatform] = OrderedDict()


def _fingerprint(config_json: dict) -> str:
    """Content hash of a platform config: equal configs compile to equal platforms (same JSON_FORMAT)."""
    return hashlib.sha256(json.dumps(config_json, sort_keys=True, default=str).encode()).hexdigest()


def compile_platform(cfg: PlatformConfig) -> CompiledPlatform:
    """Merge the templates, compile every string and parse every rule once. Raises EngineError."""
    _check_config(cfg)
    warnings = check_variable_names(cfg.pool_variables, "common_default_variables")
    warnings += check_variable_names(cfg.platform_variables, "default_variables")
    defaults = layer_defaults(cfg.pool_variables, cfg.platform_variables)  # bad values raise here
    for name, body in cfg.templates:  # compile each template on its own first: errors in its own paths
        try:
            CompiledTemplate(body)
        except EngineError as error:
            raise error.at(f"pod_template[{name}]") from None
    body, origins = merge_templates_traced(cfg.templates)
    merged = MergedTemplate(body, origins=origins)
    compiled = CompiledPlatform(cfg, merged, origins=origins, warnings=warnings)
    compiled.default_variables = defaults
    _ = compiled.template, compiled.template_origins, compiled.rules  # compile now: errors at config save
    return compiled


def _check_config(cfg: PlatformConfig) -> None:
    for name in ("pool", "platform"):
        if not isinstance(getattr(cfg, name), str) or not getattr(cfg, name):
            raise EngineError("must be a non-empty name", field=name, value=getattr(cfg, name))
    for name in ("host_network_allowed", "privileged_allowed"):
        if not isinstance(getattr(cfg, name), bool):
            raise EngineError("must be true or false", field=name, value=getattr(cfg, name))
    for index, entry in enumerate(cfg.templates):
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], str)):
            raise EngineError("templates are (name, body) pairs", field=f"templates[{index}]")
    for index, entry in enumerate(cfg.rule_sets):
        if not (isinstance(entry, (tuple, list)) and len(entry) == 2 and isinstance(entry[0], str)):
            raise EngineError("rule sets are (name, rules) pairs", field=f"rule_sets[{index}]")
    normalize_mounts(list(cfg.allowed_mounts))
