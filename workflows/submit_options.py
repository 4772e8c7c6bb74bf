"""OSMO's submission options that change the spec: `env_vars` (`osmo workflow submit --set-env K=V`: added to
every task's environment, over the spec's own) and `label` (`--label K=V`: over the spec's labels).

The options are merged into the document, which is then parsed again (`workflows.services`), so the stored
spec is what runs, retries included, and the merged values pass the same checks as written ones.
Pure Python: no Django, no I/O.
"""

from __future__ import annotations

import copy

from workflows.errors import InvalidSpec

__all__ = ["with_options"]


def with_options(document: dict, env_vars: list[str], labels: list[str]) -> dict:
    """A copy of the (parsed, JSON-safe) document with the environment and labels merged in."""
    merged = copy.deepcopy(document)
    workflow = merged["workflow"]
    environment = _pairs(env_vars, "env_vars")
    if environment:
        tasks = list(workflow.get("tasks") or [])
        tasks += [task for group in workflow.get("groups") or [] for task in group.get("tasks") or []]
        for task in tasks:
            task["environment"] = {**(task.get("environment") or {}), **environment}
    extra_labels = _pairs(labels, "label")
    if extra_labels:
        workflow["labels"] = {**(workflow.get("labels") or {}), **extra_labels}
    return merged


def _pairs(items: list[str], field: str) -> dict[str, str]:
    found = {}
    for index, item in enumerate(items):
        key, equals, value = str(item).partition("=")
        if not equals or not key.strip():
            raise InvalidSpec(f"{item!r} is not KEY=VALUE", field=f"{field}[{index}]", value=item)
        found[key.strip()] = value
    return found
