"""The machine-provider registry is the one list of providers: the BACKEND config type, the model's choices
and `provider_for` read it (docs/machine-pool-providers.md, "Adding a provider")."""

from __future__ import annotations

import importlib

import pytest

from clusters.config_types import MACHINE_PROVIDERS
from clusters.machinepools.providers import provider_for, registry
from clusters.machinepools.providers.base import ProviderError
from clusters.models import Backend


@pytest.mark.parametrize("kind", registry.KINDS, ids=lambda kind: kind.name)
def test_each_provider_is_a_backend_choice_built_by_its_module(kind):
    assert kind.name in MACHINE_PROVIDERS
    assert (kind.name, kind.label) in Backend._meta.get_field("machine_provider").choices
    assert callable(importlib.import_module(kind.module).from_backend)


@pytest.mark.parametrize("kind", registry.KINDS, ids=lambda kind: kind.name)
def test_a_backend_missing_what_its_provider_needs_is_told_which_setting(kind):
    backend = Backend(name="b", machine_provider=kind.name, **{need.setting: "" for need in kind.needs})
    with pytest.raises(ProviderError) as refused:
        provider_for(backend)
    assert refused.value.field == kind.needs[0].setting
