"""The one error root: every refusal names the field, the value and the reason.

Django-free (it imports nothing from Django or any app), so the pure engine (`pools.engine.errors`) and
the services' domain errors both derive from `PortalError`. Services raise them; the API maps them to JSON
(portal.error_responses), admin forms show them on the form, management commands print them on one line and exit
non-zero: each of those catches `PortalError`, never a list of families.
"""

from __future__ import annotations

_PLAIN = (str, int, float, bool, type(None))


class PortalError(Exception):
    """A bad input: `field` (a dotted path such as `tasks[0].image`), its `value` and the `reason`.

    `status` and `code` are what the API answers with; `value_limit` bounds the value shown in messages.
    `osmo_code` is OSMO's `error_code` for it (None: derived from the status, portal/error_responses.py)."""

    status = 400
    code = "invalid"
    osmo_code: str | None = None
    value_limit: int | None = 120

    def __init__(self, reason: str, *, field: str = "", value: object = None, code: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.value = value
        if code:
            self.code = code

    def __str__(self) -> str:
        where = f"{self.field}: " if self.field else ""
        shown = "" if self.value is None else f" (value: {_short(self.value, self.value_limit)})"
        return f"{where}{self.reason}{shown}"

    def details(self) -> dict:
        """{field, value, reason}, the value reduced to something JSON can hold."""
        value = self.value if isinstance(self.value, _PLAIN) else self.value_text()
        return {"field": self.field, "value": value, "reason": self.reason}

    def value_text(self) -> str:
        return _short(self.value, self.value_limit)

    def as_dict(self) -> dict:
        return {"code": self.code, **self.details()}


class DomainError(PortalError):
    """A service's refusal (config, workflow, access ...)."""

    @classmethod
    def from_engine(cls, error: PortalError, prefix: str = "") -> DomainError:
        field = f"{prefix}.{error.field}" if prefix and error.field else (prefix or error.field)
        return cls(error.reason, field=field, value=error.value)


class NotFound(DomainError):
    status = 404
    code = "not_found"


class Conflict(DomainError):
    status = 409
    code = "conflict"


class PermissionDenied(DomainError):
    status = 403
    code = "forbidden"


def _short(value: object, limit: int | None = 120) -> str:
    text = repr(value)
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."
