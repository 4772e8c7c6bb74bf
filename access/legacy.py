"""Convert OSMO 6.0 path-glob role actions to 6.2 semantic policies (NVIDIA/OSMO: 6.0's
`postgres.py:Role.has_access`, 6.2's `ConvertLegacyActionToSemantic`).

6.0 actions are `{"base": "http", "path": <glob>, "method": <method>}` (or the string form
`http:<path>:<method>`); the glob is `fnmatch`-style (`*` crosses `/`), `*` for the path or method
means any, and a path starting with `!` denies. Like OSMO 6.2, we find which API endpoints the glob
could reach (a small registry of OSMO's paths) and emit the semantic actions of those endpoints; for
pool-scoped endpoints the pool part of the glob becomes the resource (`/api/pool/team*` → `pool/team*`).

Unlike OSMO, `!` deny patterns are kept (as Deny policies) instead of being dropped. Note that a 6.2 Deny
wins across all of a user's roles, while a 6.0 `!` only cancelled Allows of its own policy: the
converted role is never more permissive than the original.

A glob that reaches no endpoint (such as the seed's `http:/api/profile/*`, which 6.0 compared
literally, so it never matched anything) is dropped with a warning; nothing is ever widened.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from fnmatch import fnmatchcase

from access import actions
from configs.errors import ConfigError

METHODS = ("get", "post", "put", "patch", "delete", "websocket")
_WILDCARD = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class Endpoint:
    methods: tuple[str, ...]
    path: str  # sample path; `{seg}` is the scoped segment
    action: str
    scope: str = ""  # resource type whose name is the `{seg}` segment; "" = resource `*`
    prefix: str = ""  # literal path before `{seg}`


def _scoped(methods, path, action, scope):
    return Endpoint(methods, path, action, scope, path.split("{seg}")[0])


REGISTRY = (
    _scoped(("post",), "/api/pool/{seg}/workflow", actions.WORKFLOW_CREATE, "pool"),
    _scoped(("post",), "/api/pool/{seg}/workflow/x/restart", actions.WORKFLOW_CREATE, "pool"),
    Endpoint(("get",), "/api/workflow", actions.WORKFLOW_LIST),
    Endpoint(("get",), "/api/task", actions.WORKFLOW_LIST),
    Endpoint(("get",), "/api/tag", actions.WORKFLOW_LIST),
    Endpoint(("get",), "/api/workflow/x", actions.WORKFLOW_READ),
    Endpoint(("get",), "/api/workflow/x/logs", actions.WORKFLOW_READ),
    Endpoint(("put", "patch"), "/api/workflow/x", actions.WORKFLOW_UPDATE),
    Endpoint(("delete",), "/api/workflow/x", actions.WORKFLOW_DELETE),
    Endpoint(("post",), "/api/workflow/x/cancel", actions.WORKFLOW_CANCEL),
    Endpoint(("get",), "/api/pool", actions.POOL_LIST),
    Endpoint(("get",), "/api/pool_quota", actions.POOL_LIST),
    Endpoint(("get",), "/api/resources", actions.RESOURCES_READ),
    Endpoint(("get",), "/api/resources/x", actions.RESOURCES_READ),
    Endpoint(("get",), "/api/profile/settings", actions.PROFILE_READ),
    Endpoint(("put", "post", "patch"), "/api/profile/settings", actions.PROFILE_UPDATE),
    Endpoint(("get",), "/api/users", actions.USER_LIST),
    _scoped(("get",), "/api/configs/{seg}", actions.CONFIG_READ, "config"),
    _scoped(("get",), "/api/configs/{seg}/x", actions.CONFIG_READ, "config"),
    _scoped(("put", "patch"), "/api/configs/{seg}", actions.CONFIG_UPDATE, "config"),
    _scoped(("put", "patch"), "/api/configs/{seg}/x", actions.CONFIG_UPDATE, "config"),
    Endpoint(("get",), "/api/auth/login", actions.AUTH_LOGIN),
    Endpoint(("post",), "/api/auth/refresh_token", actions.AUTH_REFRESH),
    Endpoint(("post", "get", "delete"), "/api/auth/access_token/x", actions.AUTH_TOKEN),
    Endpoint(("get",), "/health", actions.SYSTEM_HEALTH),
    Endpoint(("get",), "/api/version", actions.SYSTEM_VERSION),
)
_ACTIONS_OF_TYPE: dict[str, set[str]] = defaultdict(set)
for _endpoint in REGISTRY:
    _ACTIONS_OF_TYPE[_endpoint.action.split(":")[0]].add(_endpoint.action)


@dataclass
class Converted:
    policies: list[dict]
    warnings: list[str]


def is_legacy_action(item: object) -> bool:
    """6.0 actions are objects with base/path/method, or strings `http:<path>:<method>`."""
    if isinstance(item, dict):
        return bool({"base", "path", "method"} & set(item))
    return isinstance(item, str) and item.startswith("http:") and item.count(":") >= 2


def convert(actions: list, where: str) -> Converted:
    """Semantic policies for a list of 6.0 actions (`where` names the list in warnings and errors)."""
    grants: dict[tuple[str, str], set[str]] = defaultdict(set)  # (effect, resource) -> actions
    warnings: list[str] = []
    for index, item in enumerate(actions):
        here = f"{where}[{index}]"
        path, method = _read(item, here)
        effect = "Allow"
        if path.startswith("!"):
            effect, path = "Deny", path[1:]
        found = _endpoints(path, method, here, warnings)
        if not found:
            hint = ""
            if re.match(r"^[a-z]+:/", path):
                hint = f" (it starts with {path.split(':')[0]!r}: did you mean {path.split(':', 1)[1]!r}?)"
            warnings.append(
                f"{here}: path {path!r} with method {method!r} reaches no API endpoint{hint}, so it "
                "granted nothing; dropped"
            )
            continue
        for action, resource in found:
            grants[(effect, resource)].add(action)
    policies = []
    for (effect, resource), granted in sorted(grants.items(), key=lambda item: (item[0][0] == "Allow", item[0])):
        policies.append({"effect": effect, "actions": _collapse(granted), "resources": [resource]})
    return Converted(policies, warnings)


def _read(item: object, here: str) -> tuple[str, str]:
    if isinstance(item, str):
        base, _, rest = item.partition(":")
        path, _, method = rest.rpartition(":")
        item = {"base": base, "path": path, "method": method}
    if not isinstance(item, dict):
        raise ConfigError('a 6.0 action is {"base": "http", "path": ..., "method": ...}', field=here, value=item)
    unknown = sorted(set(item) - {"base", "path", "method"})
    if unknown:
        raise ConfigError(
            "unknown field; a 6.0 action has base, path and method", field=f"{here}.{unknown[0]}", value=unknown[0]
        )
    base, path, method = item.get("base", "http"), item.get("path"), str(item.get("method", "*")).lower()
    if base != "http":
        raise ConfigError("only the 'http' base is supported", field=f"{here}.base", value=base)
    if not isinstance(path, str) or not path:
        raise ConfigError("is required: an API path glob such as /api/pool/team*", field=f"{here}.path", value=path)
    bare = path[1:] if path.startswith("!") else path
    if not bare.startswith(("/", "*")) and not re.match(r"^[a-z]+:/", bare):  # a scheme gets its own hint later
        raise ConfigError(
            f"an API path glob starts with '/' or '*' (as OSMO requires): did you mean {'/' + bare!r}?",
            field=f"{here}.path",
            value=path,
        )
    if method != "*" and method not in METHODS:
        raise ConfigError(
            f"unknown method; expected * or one of {', '.join(METHODS)}",
            field=f"{here}.method",
            value=item.get("method"),
        )
    return path, method


def _endpoints(glob: str, method: str, here: str, warnings: list[str]) -> set[tuple[str, str]]:
    if glob == "*" and method == "*":
        return {(actions.EVERYTHING, "*")}
    found = set()
    for endpoint in REGISTRY:
        if method != "*" and method not in endpoint.methods:
            continue
        resource, sample = "*", endpoint.path
        if endpoint.scope:
            segment = _segment(glob, endpoint.prefix)
            if segment is None:
                continue
            if _WILDCARD.search(segment.rstrip("*")):
                warnings.append(
                    f"{here}: {glob!r}: only a trailing '*' can be kept in a resource pattern; "
                    f"{endpoint.action} for {segment!r} dropped"
                )
                continue
            resource = f"{endpoint.scope}/{segment}"
            sample = endpoint.path.replace("{seg}", segment.rstrip("*") or "x")
        if fnmatchcase(sample, glob):
            found.add((endpoint.action, resource))
    return found


def _segment(glob: str, prefix: str) -> str | None:
    """The glob's pattern for the path segment after `prefix` (`/api/pool/team*` → `team*`), `*` when
    the glob covers every segment (`/api/pool*`, `/api/*`, `*`), None when it cannot reach `prefix`."""
    if glob.startswith(prefix):
        segment = glob[len(prefix) :].split("/", 1)[0]
        return segment or None
    head = glob[:-1]
    if glob.endswith("*") and not _WILDCARD.search(head) and prefix.startswith(head):
        return "*"
    return None


def _collapse(actions: set[str]) -> list[str]:
    """`profile:Read` + `profile:Update` → `profile:*` when every action of the type is present."""
    result = set(actions)
    for kind, every in _ACTIONS_OF_TYPE.items():
        if every <= result and len(every) > 1:
            result = (result - every) | {f"{kind}:*"}
    return sorted(result)
