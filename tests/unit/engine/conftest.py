"""Shared builders for engine tests: an OSMO-default platform and variations of it."""

from __future__ import annotations

import pytest

from pools.engine.defaults import OSMO_DEFAULT_VARIABLES, default_templates, default_validations
from pools.engine.platform import PlatformConfig, compile_platform


def osmo_config(*, extra_templates=(), extra_rules=(), **overrides) -> PlatformConfig:
    templates = default_templates()
    config = PlatformConfig(
        pool="team",
        platform="a100",
        templates=[
            ("default_ctrl", templates["default_ctrl"]),
            ("default_user", templates["default_user"]),
            *extra_templates,
        ],
        rule_sets=[*default_validations().items(), *extra_rules],
        pool_variables=dict(OSMO_DEFAULT_VARIABLES),
    )
    for name, value in overrides.items():
        setattr(config, name, value)
    return config


@pytest.fixture
def make_platform():
    """make_platform(extra_templates=[(name, body)], privileged_allowed=True, ...) -> CompiledPlatform"""
    return lambda **kwargs: compile_platform(osmo_config(**kwargs))
