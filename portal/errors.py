"""Domain errors shared by every app: each names the field, the value and the reason.

Services raise them; the API maps them to JSON (see portal.api), admin forms show them on the form,
management commands print them on one line and exit non-zero.
"""

from __future__ import annotations

from pools.engine.errors import EngineError


class DomainError(Exception):
    status = 400
    code = "invalid"

    def __init__(self, reason: str, *, field: str = "", value: object = None, code: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.value = value
        if code:
            self.code = code

    def __str__(self) -> str:
        where = f"{self.field}: " if self.field else ""
        shown = "" if self.value is None else f" (value: {_short(self.value)})"
        return f"{where}{self.reason}{shown}"

    def as_dict(self) -> dict:
        value = self.value if isinstance(self.value, (str, int, float, bool, type(None))) else _short(self.value)
        return {"code": self.code, "field": self.field, "value": value, "reason": self.reason}

    @classmethod
    def from_engine(cls, error: EngineError, prefix: str = "") -> DomainError:
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


def _short(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
