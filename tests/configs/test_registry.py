"""Config handlers, companions, receivers and hooks are wired by dotted path and imported on first use
(configs.registry, portal.lazy): the system checks import every path, so a misspelt one fails
`manage.py check` and this suite instead of the first write that would have needed it."""

from __future__ import annotations

import pytest
from django.core import checks
from django.core.management import call_command

from configs import registry
from configs.errors import ConfigError
from portal import lazy


def test_every_registered_handler_companion_receiver_and_hook_imports():
    assert registry.check_registry() == []
    assert lazy.check_paths() == []
    assert registry.config_types() == sorted(
        ["BACKEND", "MACHINE_POOL", "NODE_POOL", "POD_TEMPLATE", "POOL", "RESOURCE_VALIDATION", "ROLE"]
    )
    for config_type, handler in registry.handlers().items():
        assert handler.config_type == config_type
        assert handler is registry.get(config_type)  # one instance per type
    assert registry.get("MACHINE_POOL").companions is not None  # installed by pools, by path


def test_manage_py_check_runs_both_checks():
    ids = {check.__name__ for check in checks.registry.registry.get_checks()}
    assert {"check_registry", "check_paths"} <= ids
    call_command("check")  # raises SystemCheckError on any error


@pytest.fixture
def scratch_type():
    """A registration made by a test, removed after it."""
    yield "SCRATCH"
    registry._HANDLER_PATHS.pop("SCRATCH", None)
    registry._COMPANION_PATHS.pop("SCRATCH", None)
    registry._HANDLERS.pop("SCRATCH", None)


def _ids(errors) -> list[tuple[str, str]]:
    return [(error.id, error.msg) for error in errors]


def test_a_misspelt_handler_path_fails_the_check(scratch_type):
    registry.register(scratch_type, "pools.services.config_handlers.PoolHandlr")
    errors = _ids(registry.check_registry())
    assert len(errors) == 1
    code, message = errors[0]
    assert code == "configs.E001"
    assert "SCRATCH" in message and "PoolHandlr" in message and "does not import" in message


def test_a_handler_registered_for_another_type_fails_the_check(scratch_type):
    registry.register(scratch_type, "pools.services.config_handlers.PoolHandler")
    assert _ids(registry.check_registry()) == [
        ("configs.E003", "pools.services.config_handlers.PoolHandler handles POOL, registered for SCRATCH")
    ]


def test_a_path_that_is_no_handler_or_no_companions_fails_the_check(scratch_type):
    registry.register(scratch_type, "pools.models.Pool")
    registry.install_companions(scratch_type, "pools.models.Pool")
    codes = [code for code, _ in _ids(registry.check_registry())]
    assert codes == ["configs.E001", "configs.E002"]


def test_companions_for_a_type_never_registered_are_refused():
    with pytest.raises(ConfigError, match="NO_SUCH_TYPE is not available"):
        registry.install_companions("NO_SUCH_TYPE", "pools.services.machine_pool_restore.MachinePoolCompanions")
    with pytest.raises(ConfigError, match="NO_SUCH_TYPE is not available"):
        registry.get("NO_SUCH_TYPE")


def test_a_misspelt_receiver_path_fails_the_check():
    receiver = lazy.function("quotas.receivers.no_such_receiver")
    try:
        errors = _ids(lazy.check_paths())
        assert errors == [
            (
                "portal.E010",
                "'quotas.receivers.no_such_receiver', wired by path, does not import: "
                "module 'quotas.receivers' has no attribute 'no_such_receiver'",
            )
        ]
    finally:
        lazy.PATHS.discard(receiver.path)


def test_a_function_by_path_calls_through_and_equals_another_of_the_same_path():
    wired = set(lazy.PATHS)
    try:
        first, second = lazy.function("portal.numbers.whole_number"), lazy.function("portal.numbers.whole_number")
        assert first == second and len({first, second}) == 1  # registries that skip duplicates still do
        assert first("7", 1, 10) == 7
    finally:  # what the process wires is the app's own (tests/architecture compares it with the code)
        lazy.PATHS.intersection_update(wired)
