"""The engine's one error type: every failure names the field (a JSON-ish path), the value and why."""

from __future__ import annotations

from portal.errors import PortalError


class EngineError(PortalError):
    """A bad input to the engine. `field` is a dotted path such as `spec.containers[0].resources.limits.cpu`.

    The engine knows no HTTP codes: its `as_dict` is the plain {field, value, reason} its reports embed."""

    value_limit = None  # the engine's messages show the whole value

    def value_text(self) -> str:
        return str(self.value)

    def as_dict(self) -> dict:
        return self.details()

    def at(self, prefix: str) -> EngineError:
        """Return the same error with `prefix` prepended to its field (for nested validation)."""
        field = f"{prefix}.{self.field}" if self.field and not self.field.startswith("[") else f"{prefix}{self.field}"
        return type(self)(self.reason, field=field, value=self.value)
