"""OSMO's spec tokens in a workflow's command, args and environment values (docs/templates-and-variables.md §3.1,
"Spec tokens"): which are substituted (`substitute_tokens`), which stay as written and why (`token_warnings`).

OSMO: src/utils/job/task.py `TaskSpec.parse` (workflow_id, output, input:<n>, input:<task>) and
`TaskGroupSpec.parse` (host:<task> of the same group); src/utils/job/workflow.py `TemplateSpec` (the tokens
shielded from Jinja). Pure Python: no Django.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

from portal.json_paths import join_index, join_key
from workflows import group_dns
from workflows.spec_fields import SpecError

if TYPE_CHECKING:
    from workflows.spec import GroupSpec, TaskSpec, WorkflowSpec

TOKEN = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")
SUPPORTED_TOKENS = ("workflow_id", "uuid")


def token_warnings(groups: list[GroupSpec]) -> list[str]:
    """Refuse `{{host:<task>}}` naming no task of the workflow; warn about every token left as written, saying
    what OSMO puts there and what to write instead (docs/templates-and-variables.md §3.1)."""
    warnings: list[str] = []
    names = {task.name for group in groups for task in group.tasks}
    for group in groups:
        own = {task.name for task in group.tasks}
        for task in group.tasks:
            for where, value in _token_fields(task):
                for token, inner in dict.fromkeys((m.group(0), m.group(1)) for m in TOKEN.finditer(value)):
                    why = _literal_token(inner, group, own, names, where, token)
                    if why:
                        warnings.append(f"{where}: {token} is left as literal text: {why}")
    return warnings


def _token_fields(task: TaskSpec) -> list[tuple[str, str]]:
    """(path, value) of each string tokens are substituted in: command, args and environment values."""
    values = [(join_index(join_key(task.path, "command"), i), v) for i, v in enumerate(task.command)]
    values += [(join_index(join_key(task.path, "args"), i), v) for i, v in enumerate(task.args)]
    return values + [(join_key(join_key(task.path, "environment"), k), v) for k, v in task.environment.items()]


def _literal_token(inner: str, group: GroupSpec, own: set[str], names: set[str], where: str, token: str) -> str:
    """Why `token` stays as written ("" when it is substituted); SpecError for a host naming no task."""
    if inner in SUPPORTED_TOKENS:
        return ""
    kind, colon, argument = inner.partition(":")
    if colon and kind == "host":
        if argument not in names:
            raise SpecError(
                f"{token} names no task of this workflow (tasks: {', '.join(sorted(names))}); "
                "write {{host:<task>}} with the name of a task of the same group",
                field=where,
                value=token,
            )
        if argument not in own:
            return (
                f"{argument} is in another group; OSMO substitutes {{{{host:<task>}}}} only for tasks of the same "
                f"group (TaskGroupSpec.parse), and only a group's tasks run together: put {argument} in group "
                f"{group.name}"
            )
        return ""
    if inner == "output" or (colon and kind == "input"):
        if inner == "output":
            place = "/osmo/data/output, the directory its sidecar uploads when the task ends"
        elif argument.isdigit():
            place = f"/osmo/data/input/{argument}, where its sidecar downloads input {argument} of the task"
        else:
            place = f"/osmo/data/input/<index>, where its sidecar downloads the output of input task {argument}"
        return (
            f"the portal moves no data (OSMO puts {place}; the task's inputs and outputs are ignored); "
            "write a path your command reads or writes itself, and move the data in the command"
        )
    return "not a token OSMO or the portal substitutes (OSMO: workflow_id, output, input:<n>, host:<task>)"


def substitute_tokens(spec: WorkflowSpec, workflow_id: str, uuid: str, namespace: str | None = None) -> WorkflowSpec:
    """A copy with `{{workflow_id}}`, `{{uuid}}` and (given the pods' `namespace`) `{{host:<task>}}` of a task of
    the same group (`workflows.group_dns.host_name`) replaced in command, args and environment values.

    Any other `{{...}}` stays as written: user values are never rendered as templates.
    """
    values = {"workflow_id": str(workflow_id), "uuid": str(uuid)}

    def group_copy(group: GroupSpec) -> GroupSpec:
        hosts = dict(values)
        if namespace is not None:
            hosts.update(
                {f"host:{t.name}": group_dns.host_name(str(uuid), group.name, t.name, namespace) for t in group.tasks}
            )

        def sub(text: str) -> str:
            return TOKEN.sub(lambda m: hosts.get(m.group(1), m.group(0)), text)

        return dataclasses.replace(group, tasks=[task_copy(task, sub) for task in group.tasks])

    def task_copy(task: TaskSpec, sub) -> TaskSpec:
        return dataclasses.replace(
            task,
            command=[sub(v) for v in task.command],
            args=[sub(v) for v in task.args],
            environment={k: sub(v) for k, v in task.environment.items()},
            volume_mounts=list(task.volume_mounts),
            exit_actions=dict(task.exit_actions),
        )

    groups = [group_copy(group) for group in spec.groups]
    return dataclasses.replace(
        spec,
        groups=groups,
        labels=dict(spec.labels),
        warnings=list(spec.warnings),
        resources={
            name: dataclasses.replace(r, nodes_excluded=list(r.nodes_excluded)) for name, r in spec.resources.items()
        },
    )
