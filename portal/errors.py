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
    `osmo_code` is the `error_code` OSMO's own client expects for this refusal (USAGE, RESOURCE, ...);
    None lets the API derive it from the status (portal.error_responses)."""

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


def with_osmo_fields(body: dict, status: int, osmo_code: str | None = None) -> dict:
    """The envelope plus what OSMO's own client reads from an error: `error_code` (which error class it
    raises) and `message` (what it prints). `osmo_code` wins; else NOTFOUND for a 404, SERVER for a 5xx,
    USER for any other refusal."""
    if osmo_code is None:
        osmo_code = "NOTFOUND" if status == 404 else "SERVER" if status >= 500 else "USER"
    return {**body, "error_code": osmo_code, "message": error_message(body)}


def error_message(body: dict) -> str:
    """One line a person can act on: the field and the value at fault, then why."""
    field, value, reason = body.get("field") or "", body.get("value"), str(body.get("reason") or "")
    if not field:
        return reason
    shown = "" if value is None or value == "" else f" {value!r}"
    return f"{field}{shown}: {reason}"


def _short(value: object, limit: int | None = 120) -> str:
    text = repr(value)
    return text if limit is None or len(text) <= limit else text[: limit - 3] + "..."
