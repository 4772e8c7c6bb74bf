"""The admin's quota grid of one node pool: departments and their projects × resources, each cell a deserved,
limit, weight and lend (lend / never). Reading is `quotas_of` (one query for the tree); saving compares what was
submitted with what is stored and writes every team that changed as ONE NODE_POOL revision (`set_team_quotas`):
a save, like an applied preview, is one entry in the history, whose diff holds every team and whose rollback
undoes all of it. Every cell the grid refuses is given back on its cell, in the grid's words, and nothing is
written; a save the whole document's checks refuse (a department that would no longer cover its projects) is
given back on the cell it names.

Cells are keyed `(team_kind, team, resource, key)`; the form's inputs are named `kind:team:resource:key`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from configs.errors import ConfigError
from portal.errors import PortalError
from quotas import units
from quotas.config_types import QUOTA_KEYS, RESOURCES, parse_quota
from quotas.models import NodePool
from quotas.services.quotas import quotas_of, require_quota_write, set_team_quotas
from quotas.services.what_if_changes import KEYWORDS

RESOURCE_WORDS = {"gpu": "GPU", "cpu": "CPU", "memory": "memory"}
SECTIONS = {"departments": "department", "projects": "project"}
# the API's "must be an integer ≥ 0" as a grid cell says it
INTEGER = "must be an integer"
GRID_WORDS = {
    "weight": "must be a whole number, 0 or more",
    "lend": "choose lend or never (never: its unused deserved stays idle for it, never lent)",
}
LEND_CHOICES = {"lend": True, "never": False}  # the lend cell's choices, as the form sends them

WHAT_IF_KEYS = {"deserved": "gpu", "limit": "limit-gpu", "weight": "weight-gpu"}  # a GPU cell's key in a what-if
Cell = tuple[str, str, str, str]  # team kind, team, resource, key


def input_name(kind: str, team: str, resource: str, key: str) -> str:
    return f"{kind}:{team}:{resource}:{key}"


def shown(resource: str, key: str, value) -> str:
    """What a cell's input shows: quantities people write (`64Gi`, `500m`), empty for no limit."""
    if value is None:
        return ""
    if key == "lend":
        return "lend" if value else "never"
    return str(value) if key == "weight" else units.show(resource, value)


@dataclass
class Saved:
    revision: int | None = None  # the one NODE_POOL revision written (None: nothing changed, or refused)
    teams: list[tuple[str, str]] = field(default_factory=list)  # (kind, team) changed by it
    errors: dict[Cell | tuple[str, str], str] = field(default_factory=dict)  # a cell, or a team as a whole

    @property
    def ok(self) -> bool:
        return not self.errors


def stored(node_pool: NodePool) -> dict[tuple[str, str], dict]:
    """(kind, team) → {resource: {deserved, limit, weight, lend}}, departments and projects."""
    tree = quotas_of(node_pool)
    found = {}
    for department in tree["departments"]:
        found[("department", department["name"])] = department["quotas"]
        for project in department["projects"]:
            found[("project", project["name"])] = project["quotas"]
    return found


def save(who, node_pool: NodePool, form: dict[str, str], description: str = "") -> Saved:
    """Apply the submitted grid (`form`: input name → text; a team's inputs missing = unchanged) as one revision;
    `description` follows what changed in its description (the grid's optional change description)."""
    result = Saved()
    require_quota_write(who)
    current = stored(node_pool)
    changes = _changes(current, form, result)
    if result.errors or not changes:
        return result
    try:
        applied = set_team_quotas(who, node_pool.name, changes, note=description)
    except PortalError as error:
        result.errors[_cell("node pool", node_pool.name, error)] = _words("node pool", node_pool.name, error)
        return result
    result.revision, result.teams = applied.revision, sorted(changes)
    return result


def _changes(current: dict, form: dict[str, str], result: Saved) -> dict[tuple[str, str], dict]:
    """(kind, team) → {resource: what changes}: the submitted cells that differ from what is stored; a refused
    cell goes to `result.errors` in the grid's words."""
    changes: dict[tuple[str, str], dict] = {}
    for (kind, team), quotas in current.items():
        for resource in RESOURCES:
            texts = {key: form.get(input_name(kind, team, resource, key)) for key in QUOTA_KEYS}
            if all(text is None for text in texts.values()):
                continue
            submitted = {key: _value(key, texts[key], quotas[resource][key]) for key in QUOTA_KEYS}
            try:
                parsed = {"lend": True, **parse_quota(resource, submitted, resource)}
            except ConfigError as error:
                result.errors[_cell(kind, team, error)] = _words(kind, team, error)
                continue
            if parsed != quotas[resource]:  # lend is said only when it changes (what the revision's text says)
                said = {k: v for k, v in parsed.items() if k != "lend" or v != quotas[resource]["lend"]}
                changes.setdefault((kind, team), {})[resource] = said
    return changes


def what_if_changes(node_pool: NodePool, form: dict[str, str]) -> tuple[list[str], Saved]:
    """The grid's GPU edits as what-if changes (quotas.services.what_if_changes: `vision h100 gpu=8 …`), and the
    refused cells (nothing to preview then). CPU and memory edits are saved, not previewed: the replay admits
    by GPUs."""
    result = Saved()
    changes = _changes(stored(node_pool), form, result)
    texts = []
    for (kind, team), resources in sorted(changes.items()):
        gpu = resources.get("gpu", {})
        said = [
            f"{WHAT_IF_KEYS[key]}={'none' if value is None else value}"
            for key, value in gpu.items()
            if key in WHAT_IF_KEYS
        ]
        if said:
            # a project named like a keyword (`capacity`…) is named as such: what_if_changes' grammar
            who = f"department {team}" if kind == "department" else f"project {team}" if team in KEYWORDS else team
            texts.append(" ".join([who, node_pool.name, *said]))
    return texts, result


def _value(key: str, text: str | None, current):
    if text is None:
        return current  # not submitted: kept
    text = text.strip()
    if key == "lend":
        return LEND_CHOICES.get(text.lower(), text)  # anything else: refused with the cell's words
    if key == "limit":
        return text or None
    if key == "weight":
        return int(text) if text.isdigit() else text or 1
    return text or 0


def _cell(kind: str, team: str, error: PortalError) -> Cell | tuple[str, str]:
    """The cell an error is about: `gpu.limit` in this team's cells, or `departments.research.gpu.deserved`
    (a department that would no longer cover its projects), or the team `projects.vision`, else `kind team` as a
    whole (the node pool, for a save's refusal that names no team)."""
    parts = error.field.split(".")
    if len(parts) == 4 and parts[0] in SECTIONS:
        return SECTIONS[parts[0]], parts[1], parts[2], parts[3]
    if len(parts) >= 2 and parts[0] in SECTIONS:
        return SECTIONS[parts[0]], parts[1]
    if len(parts) == 2 and parts[0] in RESOURCES and parts[1] in QUOTA_KEYS:
        return kind, team, parts[0], parts[1]
    return kind, team


def _words(kind: str, team: str, error: PortalError) -> str:
    cell = _cell(kind, team, error)
    where = f"{cell[0]} {cell[1]}, {RESOURCE_WORDS[cell[2]]} {cell[3]}" if len(cell) == 4 else f"{cell[0]} {cell[1]}"
    value = "" if error.value in (None, "") else f" (you entered {error.value!r})"
    worded = len(cell) == 4 and (error.reason.startswith(INTEGER) or cell[3] == "lend")
    reason = GRID_WORDS.get(cell[3], error.reason) if worded else ""
    return f"{where}: {reason or error.reason}{value}"
