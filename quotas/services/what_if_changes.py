"""The changes a what-if tries (docs/quotas.md, "What-if"): a small grammar, one change per string, parsed into
`Change`s and applied to the pure engine's quota trees and capacities (nothing is written).

    [project] PROJECT NODE_POOL key=value …  a project's quota in one node pool
    [project] PROJECT priority=N             a project's over-quota rank (every node pool)
    department DEPT NODE_POOL key=value …    a department's quota in one node pool
    capacity NODE_POOL gpu=+8 | gpu=-4 | gpu=64   nodes added or removed: GPUs more, fewer, or in all
    machinepool NAME max=N                   a machine pool's max nodes (quotas.services.what_if_machines)

Keys (GPU quotas: what the replay admits by): `gpu=N` (deserved), `limit-gpu=N|none`, `weight-gpu=N`, and for a
project `priority=N`. Bounds: GPUs 0 to MAX_GPUS (capacity deltas −MAX_GPUS to +MAX_GPUS), weights 0 to
MAX_WEIGHT, priority −MAX_PRIORITY to MAX_PRIORITY, a machine pool's max 0 to MAX_NODES; at most MAX_CHANGES
changes, MAX_TEXT characters each. Each bad token is a DomainError naming the change (`changes[2]`), the token
and why.

Keywords and project names: a change that starts with `department`, `capacity` or `machinepool` and has that
form's shape (three names; a node pool and `gpu=` only; a name and `max=`) is that form; otherwise it is a
project's change (a project named `department` reads `department h100 gpu=8` as its own). `project NAME …`
always names a project: the one way to name a project called `capacity` (`capacity h100 gpu=8` is the node
pool's capacity) or `project`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from pools.engine.errors import EngineError
from pools.engine.quota_model import QuotaTree, TeamQuota
from portal.errors import DomainError
from portal.numbers import MAX_LIST_ITEMS, whole_number

MAX_CHANGES = MAX_LIST_ITEMS  # the one bound on every list a client sends (docs/limits.md)
MAX_TEXT = 500
MAX_GPUS = 100_000
MAX_WEIGHT = 1000
MAX_PRIORITY = 1000
MAX_NODES = 10_000  # a machine pool's max: ROSA's and Karpenter's pools stay far below
QUOTA_KEYS = {"gpu": "deserved", "limit-gpu": "limit", "weight-gpu": "weight"}
GRAMMAR = (
    "PROJECT NODE_POOL gpu=N [limit-gpu=N|none] [weight-gpu=N], PROJECT priority=N, "
    "department DEPT NODE_POOL gpu=N …, capacity NODE_POOL gpu=+N|-N|N, or machinepool NAME max=N "
    "(project PROJECT … names a project whose name is a keyword)"
)
KEYWORDS = ("department", "capacity", "machinepool", "project")


@dataclass(frozen=True)
class Change:
    """One parsed change. `kind`: project, department, priority, capacity or machinepool (`team`: the machine
    pool; `node_pool` and `values["gpu"]` once resolved: quotas.services.what_if_machines); `values`: key → int
    or None."""

    kind: str
    team: str
    node_pool: str
    values: Mapping[str, int | None]
    text: str
    relative: bool = False  # capacity: +N / -N rather than a total


def parse_changes(texts: list, *, field: str = "changes") -> list[Change]:
    """Parse every change (a list of strings); the first bad one raises, naming it."""
    if not isinstance(texts, list):
        raise DomainError("a list of change strings", field=field, value=type(texts).__name__)
    if len(texts) > MAX_CHANGES:
        raise DomainError(f"at most {MAX_CHANGES} changes, not {len(texts)}", field=field, value=len(texts))
    return [parse_change(text, f"{field}[{index}]") for index, text in enumerate(texts)]


def parse_change(text: object, where: str) -> Change:
    if not isinstance(text, str) or not text.strip():
        raise DomainError(f"a change is a non-empty string: {GRAMMAR}", field=where, value=text)
    if len(text) > MAX_TEXT:
        raise DomainError(f"at most {MAX_TEXT} characters", field=where, value=text[:40] + "…")
    words = text.split()
    names = [w for w in words if "=" not in w]
    settings = words[len(names) :]
    if any("=" not in w for w in settings):
        raise DomainError(f"names first, then key=value settings: {GRAMMAR}", field=where, value=text)
    if not settings:
        raise DomainError(f"give at least one key=value: {GRAMMAR}", field=where, value=text)
    values = _settings(settings, where)
    keyword = names[0] if names and names[0] in KEYWORDS else ""
    if keyword == "project" and len(names) > 1:
        return _project(names[1:], values, text, where)
    if keyword == "capacity" and (len(names) == 2 and set(values) == {"gpu"} or not _project_shaped(names)):
        return _capacity(names, values, text, where)
    if keyword == "department" and (len(names) == 3 or not _project_shaped(names)):
        if len(names) != 3:
            raise DomainError(f"department DEPT NODE_POOL key=value …: {GRAMMAR}", field=where, value=text)
        _only(values, set(QUOTA_KEYS), "a department's", where)
        return Change("department", names[1], names[2], _quota_values(values, where), text)
    if keyword == "machinepool" and ("max" in values or not _project_shaped(names)):
        return _machine_pool(names, values, text, where)
    return _project(names, values, text, where)


def _project_shaped(names: list[str]) -> bool:
    """One name or two: what a project's change has (a keyword with another shape may be a project's name)."""
    return len(names) in (1, 2)


def _project(names: list[str], values: dict[str, str], text: str, where: str) -> Change:
    if len(names) == 1:
        _only(values, {"priority"}, "without a node pool, only the project's", where)
        return Change("priority", names[0], "", {"priority": _bounded(values["priority"], where, "priority")}, text)
    if len(names) != 2:
        raise DomainError(f"name the project and the node pool: {GRAMMAR}", field=where, value=text)
    _only(values, {*QUOTA_KEYS, "priority"}, "a project's", where)
    parsed = _quota_values({k: v for k, v in values.items() if k != "priority"}, where)
    if "priority" in values:
        parsed["priority"] = _bounded(values["priority"], where, "priority")
    return Change("project", names[0], names[1], parsed, text)


def _settings(settings: list[str], where: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for token in settings:
        key, _, value = token.partition("=")
        key = key.strip().lower()
        if key in values:
            raise DomainError("said twice", field=f"{where}.{key}", value=token)
        if not value:
            raise DomainError("give a value after =", field=f"{where}.{key}", value=token)
        values[key] = value
    return values


def _only(values: dict, allowed: set[str], whose: str, where: str) -> None:
    for key in values:
        if key not in allowed:
            raise DomainError(
                f"unknown key; {whose} keys are {', '.join(sorted(allowed))}", field=f"{where}.{key}", value=key
            )


def _quota_values(values: dict[str, str], where: str) -> dict[str, int | None]:
    parsed: dict[str, int | None] = {}
    for key, text in values.items():
        if key == "limit-gpu" and text.lower() == "none":
            parsed["limit"] = None
        else:
            parsed[QUOTA_KEYS[key]] = _bounded(text, where, key)
    return parsed


def _bounded(text: str, where: str, key: str) -> int:
    least, most = {"weight-gpu": (0, MAX_WEIGHT), "priority": (-MAX_PRIORITY, MAX_PRIORITY)}.get(key, (0, MAX_GPUS))
    value = whole_number(text, least, most)
    if value is None:
        raise DomainError(f"must be a whole number from {least} to {most}", field=f"{where}.{key}", value=text)
    return value


def _capacity(names: list[str], values: dict[str, str], text: str, where: str) -> Change:
    if len(names) != 2:
        raise DomainError(f"capacity NODE_POOL gpu=+N|-N|N: {GRAMMAR}", field=where, value=text)
    _only(values, {"gpu"}, "capacity's", where)
    raw = values["gpu"].strip()
    relative = raw[:1] in "+-"
    least = -MAX_GPUS if relative else 0
    value = whole_number(raw, least, MAX_GPUS)
    if value is None:
        reason = f"GPUs more (+N) or fewer (-N), up to {MAX_GPUS}, or the total, 0 to {MAX_GPUS}"
        raise DomainError(reason, field=f"{where}.gpu", value=raw)
    return Change("capacity", "", names[1], {"gpu": value}, text, relative=relative)


def _machine_pool(names: list[str], values: dict[str, str], text: str, where: str) -> Change:
    if len(names) != 2:
        raise DomainError(f"machinepool NAME max=N: {GRAMMAR}", field=where, value=text)
    _only(values, {"max"}, "a machine pool's", where)
    value = whole_number(values["max"].strip(), 0, MAX_NODES)
    if value is None:
        raise DomainError(f"must be a whole number from 0 to {MAX_NODES}", field=f"{where}.max", value=values["max"])
    return Change("machinepool", names[1], "", {"max": value}, text)


# -- applying them -------------------------------------------------------------------------------------------------
def check_targets(changes: list[Change], trees: Mapping[str, QuotaTree], visible=None) -> None:
    """Every change names a known node pool and team (one the caller may see: `visible(kind, name)`)."""
    projects = {p.name for tree in trees.values() for p in tree.projects}
    for index, change in enumerate(changes):
        where = f"changes[{index}]"
        if change.node_pool and change.node_pool not in trees:
            raise DomainError("unknown node pool", field=f"{where}.node_pool", value=change.node_pool)
        kind = "department" if change.kind == "department" else "project"
        if change.kind in ("capacity", "machinepool"):
            continue
        known = (
            {d.name for d in trees[change.node_pool].departments}
            if kind == "department"
            else ({p.name for p in trees[change.node_pool].projects} if change.node_pool else projects)
        )
        if change.team not in known or (visible is not None and not visible(kind, change.team)):
            raise DomainError(f"unknown {kind} here", field=f"{where}.{kind}", value=change.team)


def apply_changes(
    changes: list[Change], trees: Mapping[str, QuotaTree], capacity: Mapping[str, int]
) -> tuple[dict[str, QuotaTree], dict[str, int]]:
    """The trees and GPU capacities with the changes made (in order); each changed tree is checked."""
    trees, capacity = dict(trees), dict(capacity)
    for index, change in enumerate(changes):
        if change.kind in ("capacity", "machinepool"):  # a machine pool's: its GPUs more or fewer, once resolved
            gpus = change.values["gpu"]
            relative = change.relative or change.kind == "machinepool"
            capacity[change.node_pool] = max(0, capacity[change.node_pool] + gpus) if relative else gpus
            continue
        pools = [change.node_pool] if change.node_pool else list(trees)
        for pool in pools:
            trees[pool] = _changed_tree(trees[pool], change)
            try:
                trees[pool].check()
            except EngineError as error:
                raise DomainError(error.reason, field=f"changes[{index}]", value=change.text) from None
    return trees, capacity


def _changed_tree(tree: QuotaTree, change: Change) -> QuotaTree:
    if change.kind == "department":
        departments = tuple(_changed_team(d, change) if d.name == change.team else d for d in tree.departments)
        return QuotaTree(departments, tree.projects)
    projects = tuple(_changed_team(p, change) if p.name == change.team else p for p in tree.projects)
    return QuotaTree(tree.departments, projects)


def _changed_team(team: TeamQuota, change: Change) -> TeamQuota:
    values = dict(change.values)
    priority = values.pop("priority", team.priority)
    quota = team.quota("gpu")
    if values:
        quota = dataclasses.replace(quota, **values)  # a limit below the deserved: refused by the tree's check
    return dataclasses.replace(team, quotas={**team.quotas, "gpu": quota}, priority=priority)
