"""The engine's one error type: every failure names the field (a JSON-ish path), the value and why."""

from __future__ import annotations


class EngineError(Exception):
    """A bad input to the engine. `field` is a dotted path such as `spec.containers[0].resources.limits.cpu`."""

    def __init__(self, reason: str, *, field: str = "", value: object = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.field = field
        self.value = value

    def __str__(self) -> str:
        where = f"{self.field}: " if self.field else ""
        shown = "" if self.value is None else f" (value: {self.value!r})"
        return f"{where}{self.reason}{shown}"

    def as_dict(self) -> dict:
        value = self.value if isinstance(self.value, (str, int, float, bool, type(None))) else str(self.value)
        return {"field": self.field, "value": value, "reason": self.reason}

    def at(self, prefix: str) -> EngineError:
        """Return the same error with `prefix` prepended to its field (for nested validation)."""
        field = f"{prefix}.{self.field}" if self.field and not self.field.startswith("[") else f"{prefix}{self.field}"
        return type(self)(self.reason, field=field, value=self.value)
