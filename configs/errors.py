"""Errors of the pools app."""

from portal.errors import Conflict, DomainError, NotFound


class ConfigError(DomainError):
    """A configuration document or field is invalid."""


class ConfigNotFound(NotFound):
    """A named configuration object does not exist."""


class ConfigInUse(Conflict):
    """A configuration object cannot be deleted because others refer to it."""

    code = "in_use"
