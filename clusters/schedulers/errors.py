"""Refusals of the scheduler translation: field, value and reason, like every portal error."""

from __future__ import annotations

from portal.errors import DomainError


class TranslationError(DomainError):
    """The quota tree cannot be written as the scheduler's objects (two entities would share one object
    name, a workload without a project on a delegating backend ...)."""

    code = "scheduler_translation"


class SchedulerObjectInvalid(DomainError):
    """A generated object does not match the scheduler's published CRD schema: a bug in the translation,
    caught before the cluster would refuse (or silently prune) it."""

    code = "scheduler_object_invalid"
