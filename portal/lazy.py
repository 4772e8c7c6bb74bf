"""Receivers, listeners and hooks named by dotted path, imported on their first call.

An app's `AppConfig.ready()` wires what it hears and the hooks it gives lower apps. Importing the functions and
objects it wires imports the services behind them (quotas' admission gate brings the admission passes, the
workflow lifecycle and the Kubernetes adapter's connection; pools' would-be nodes bring placement and the
template sandbox), and every process pays that at start-up, a one-shot `manage.py quota show` too
(docs/performance.md, CLI). Wired by path, a module is imported when something first calls into it:

    lazy.connect(nodes_changed, "quotas.receivers.nodes_changed", dispatch_uid="quotas.nodes_changed")
    revisions.LISTENERS.append(lazy.function("quotas.services.charge_cache.config_written"))
    admission_gate.register(lazy.instance("quotas.services.gate.AdmissionGate"))

Every path named here is remembered; the system check `check_paths` imports them all, so a misspelt one fails
`manage.py check` (and tests/configs/test_registry.py), not the first write that would have called it. A web
server imports them all at start (`portal.wsgi`), so no request pays for them; the long-running commands run
the system checks, which do the same.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from django.core import checks
from django.utils.functional import SimpleLazyObject

PATHS: set[str] = set()  # every path wired through this module, for `check_paths`
_RESOLVED: dict[str, object] = {}


def resolve(path: str):
    """The object at dotted `path` ("package.module.name"), importing its module the first time."""
    try:
        return _RESOLVED[path]
    except KeyError:
        module, _, name = path.rpartition(".")
        found = _RESOLVED[path] = getattr(importlib.import_module(module), name)
        return found


@dataclass(frozen=True)
class Function:
    """A function called by dotted path. Two are equal when their paths are, so a registry that skips one
    installed twice (`revisions.LISTENERS`, `platform_checks.register`) still does."""

    path: str

    def __call__(self, *args, **kwargs):
        return resolve(self.path)(*args, **kwargs)


def function(path: str) -> Function:
    PATHS.add(path)
    return Function(path)


def instance(path: str) -> SimpleLazyObject:
    """An instance of the class at `path`, made with no arguments on its first use (an attribute, a call)."""
    PATHS.add(path)
    return SimpleLazyObject(lambda: resolve(path)())


def connect(signal, path: str, *, dispatch_uid: str, sender=None) -> None:
    """Connect the function at `path` to `signal`. Held strongly: a receiver made here has no other
    reference, and a weakly held one would be dropped at the next garbage collection."""
    signal.connect(function(path), sender=sender, weak=False, dispatch_uid=dispatch_uid)


def load_all() -> None:
    """Import everything wired by path now (a web server at start: `portal.wsgi`)."""
    for path in sorted(PATHS):
        resolve(path)


def check_paths(app_configs=None, **kwargs) -> list[checks.Error]:
    """Every path wired through this module imports and names something callable (a system check, registered
    by `configs.apps`: the portal app has no AppConfig of its own)."""
    errors = []
    for path in sorted(PATHS):
        try:
            found = resolve(path)
        except (ImportError, AttributeError, ValueError) as error:
            errors.append(checks.Error(f"{path!r}, wired by path, does not import: {error}", id="portal.E010"))
            continue
        if not callable(found):
            errors.append(checks.Error(f"{path!r}, wired by path, is not callable", id="portal.E011"))
    return errors
