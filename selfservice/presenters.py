"""Turn service results and domain errors into what the templates show (no decisions here)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from pools.engine.errors import EngineError
from portal.errors import DomainError
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
