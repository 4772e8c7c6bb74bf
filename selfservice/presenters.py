"""Turn service results and domain errors into what the templates show (no decisions here)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from pools.engine.errors import EngineError
from portal.errors import DomainError
from portal.source_lines import error_line, without_position
from workflows.errors import PoolInMaintenance, WorkflowInvalid
from workflows.spec_fields import SpecError


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
