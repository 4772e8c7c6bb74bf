"""Turn service results and domain errors into what the templates show (no decisions here)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from pools.engine.errors import EngineError
from pools.services.preview import annotated_yaml
from portal.errors import DomainError
from portal.source_lines import error_line, without_position
from workflows.errors import PoolInMaintenance, WorkflowInvalid
from workflows.spec_fields import SpecError

MAX_REJECTED_SHOWN = 15


@dataclass
class TaskPreview:
    name: str
    platform: str
    ok: bool
    lines: list[tuple[str, str]]
    fits: list[str]
    rejected: list[tuple[str, list[str]]]
    more_rejected: int
    problems: list[str]
    warnings: list[str]

    @property
    def verdict(self) -> str:
        if not self.ok:
            return "refused"
        return "fits" if self.fits else "queues"

    @property
    def verdict_text(self) -> str:
        if not self.ok:
            return "Would be refused"
        if self.fits:
            count = len(self.fits)
            return f"Would start now: {count} node{'s' if count != 1 else ''} can take it"
        return "Accepted, but no node has room right now: it would wait in the queue"


@dataclass
class ErrorView:
    title: str
    reason: str
    field: str = ""
    value: str = ""
    code: str = ""
    status: int = 400
    problems: list[dict] = dataclasses.field(default_factory=list)
    line: int | None = None  # where in the spec, for the editor's marker (locate_in_spec)

    @property
    def line_message(self) -> str:
        """The reason as the editor shows it at its line (the line is already there)."""
        where = f"{self.field}: " if self.field and not self.reason.startswith(self.field) else ""
        return where + without_position(self.reason)


def preview_tasks(result: dict) -> list[TaskPreview]:
    rows = []
    for task in result.get("tasks", []):
        validation = task.get("validation") or {}
        problems = [f"{f.get('message')} ({f.get('rule', 'rule')})" for f in validation.get("static", [])]
        problems += [f"{g['field']}: {g['reason']}" for g in validation.get("gates", [])]
        problems += [f"{s['path']}: {s['reason']}" for s in validation.get("schema", [])]
        nodes = validation.get("nodes")
        if nodes and not nodes.get("passed"):
            problems.append(nodes.get("error") or "no node of the platform satisfies the resource rules")
        placement = task.get("placement") or {"fits": [], "rejected": {}}
        rejected = sorted(placement.get("rejected", {}).items())
        rows.append(
            TaskPreview(
                name=task["name"],
                platform=task["platform"],
                ok=bool(task.get("ok")),
                lines=annotated_yaml(task["pod"], task.get("provenance") or {}) if task.get("pod") else [],
                fits=list(placement.get("fits", [])),
                rejected=rejected[:MAX_REJECTED_SHOWN],
                more_rejected=max(0, len(rejected) - MAX_REJECTED_SHOWN),
                problems=problems,
                warnings=list(task.get("warnings") or []),
            )
        )
    return rows


def locate_in_spec(view: ErrorView, error: Exception, spec: str) -> ErrorView:
    """The spec's lines the error is about: its own (a position, or its path under `workflow:`), and each
    refused task's (the line naming it)."""
    view.line = error_line(spec, error, prefixes=("workflow", ""))
    view.problems = [{**problem, "line": _task_line(spec, problem.get("task"))} for problem in view.problems]
    return view


def _task_line(spec: str, task: object) -> int | None:
    """The line of `name: <task>` (the last one: the workflow's own name comes first)."""
    if not task:
        return None
    named = re.compile(rf"^\s*(?:-\s+)?name:\s*(['\"]?){re.escape(str(task))}\1\s*(?:#.*)?$")
    lines = [number for number, text in enumerate(spec.splitlines(), 1) if named.match(text)]
    return lines[-1] if lines else None


def describe_error(error: Exception) -> ErrorView:
    value = "" if getattr(error, "value", None) is None else str(error.value)[:200]
    common = {
        "reason": getattr(error, "reason", str(error)),
        "field": getattr(error, "field", "") or "",
        "value": value,
    }
    if isinstance(error, SpecError):
        return ErrorView("The spec has a mistake", code="spec_invalid", **common)
    if isinstance(error, WorkflowInvalid):
        return ErrorView("A task cannot run on its platform", code=error.code, problems=error.problems, **common)
    if isinstance(error, PoolInMaintenance):
        return ErrorView("The pool is in maintenance", code=error.code, status=error.status, **common)
    if isinstance(error, DomainError):
        title = {403: "You may not do this", 404: "Not found", 409: "Not possible now"}.get(
            error.status, "Not accepted"
        )
        return ErrorView(title, code=error.code, status=error.status, **common)
    if isinstance(error, EngineError):
        return ErrorView("The spec cannot be resolved", code="invalid", **common)
    raise TypeError(f"not a domain error: {error!r}")
