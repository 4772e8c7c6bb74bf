"""Errors of the teams app: each maps to one HTTP status and a stable code (portal.errors)."""

from portal.errors import Conflict, DomainError, NotFound


class TeamInvalid(DomainError):
    """A department or project field is invalid (name, description, IdP group)."""


class TeamExists(Conflict):
    code = "exists"


class DepartmentNotFound(NotFound):
    code = "department_not_found"


class ProjectNotFound(NotFound):
    code = "project_not_found"


class ProjectChoiceRequired(DomainError):
    """A submission names no project, and its submitter belongs to several: which one pays is theirs to say."""

    code = "project_required"

    def __init__(self, reason: str, *, choices: list[str]):
        super().__init__(reason, field="project", value=None)
        self.choices = choices

    def as_dict(self) -> dict:
        return {**super().as_dict(), "choices": self.choices}


class UnknownProject(DomainError):
    """A submission names a project that does not exist (a 400 on the submission, not a 404 of its URL)."""

    code = "unknown_project"
