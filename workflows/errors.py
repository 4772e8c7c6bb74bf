"""Errors of the workflows app: each maps to one HTTP status and a stable code."""

from pools.errors import PoolNotFound
from portal.errors import Conflict, DomainError, NotFound

__all__ = ["PoolNotFound"]  # raised by workflows too; defined with the pools


class WorkflowInvalid(DomainError):
    """The spec is valid YAML but a task cannot run on its platform (rules, gates, schema)."""

    code = "workflow_invalid"
    osmo_code = "RESOURCE"  # OSMO's resource-validation refusal

    def __init__(self, reason: str, *, field: str = "", value: object = None, problems: list | None = None):
        super().__init__(reason, field=field, value=value)
        self.problems = problems or []

    def as_dict(self) -> dict:
        return {**super().as_dict(), "problems": self.problems}


class InvalidSpec(DomainError):
    """The submitted document is not a valid workflow spec (`field` is its path, e.g. `tasks[0].image`)."""

    code = "invalid_spec"
    osmo_code = "USAGE"  # OSMO's OSMOUsageError: the spec or the submission's options are wrong


class WorkflowNotFound(NotFound):
    code = "workflow_not_found"


class PoolInMaintenance(Conflict):
    code = "pool_in_maintenance"


class WorkflowFinished(Conflict):
    code = "workflow_finished"
