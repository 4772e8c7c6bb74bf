"""The description vocabulary: one description gives parsing, snapshots, form bodies and columns."""

from __future__ import annotations

import pytest
from django.db import models
from django.test.utils import isolate_apps

from configs import registry
from configs.errors import ConfigError
from configs.kinds import Bool, Group, Int, Names, Text
from configs.schema import Field, Schema

LIMITS = Group(
    [Field("low", Int(0), default=0, attr="limit_low"), Field("high", Int(0), default=9, attr="limit_high")],
    nullable=True,
)
THING = Schema(
    "THING",
    kind_label="thing",
    name_in_body=True,
    fields=(
        Field("description", Text()),
        Field("enabled", Bool(), default=True),
        Field("limits", LIMITS, attr=None, default=None),
        Field("tags", Names(), default=[]),
        Field("force", Bool(), default=False, write_only=True),
    ),
)


def test_a_parsed_document_snapshots_like_the_object_it_becomes():
    doc = THING.parse("t1", {"description": "d", "limits": {"low": 2}, "tags": ["a", "b"], "force": True})
    assert (doc.limit_low, doc.limit_high, doc.force) == (2, 9, True)
    snapshot = THING.snapshot(doc)
    assert snapshot == {
        "name": "t1",
        "description": "d",
        "enabled": True,
        "limits": {"low": 2, "high": 9},
        "tags": ["a", "b"],
    }

    class Row:  # what a model object offers: its columns
        name, description, enabled, limit_low, limit_high, tags = "t1", "", True, None, None, []

    row = Row()
    assert THING.write(doc, row) == ["description", "limit_low", "limit_high", "tags"]
    assert THING.snapshot(row) == snapshot


def test_a_nullable_group_is_null_when_its_columns_are():
    doc = THING.parse("t1", {"limits": None})
    assert THING.snapshot(doc)["limits"] is None


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"enabled": "yes"}, "enabled", "true or false"),
        ({"limits": {"low": -1}}, "limits.low", "integer ≥ 0"),
        ({"limits": {"middle": 1}}, "limits.middle", "unknown field"),
        ({"tags": ["a", "a"]}, "tags", "same name twice"),
        ({"colour": "red"}, "colour", "allowed fields are description, enabled, force, limits, name, tags"),
        ({"name": "t2"}, "name", "does not match the thing name 't1'"),
    ],
)
def test_errors_name_the_field_the_value_and_why(body, field, reason):
    with pytest.raises(ConfigError) as caught:
        THING.parse("t1", body)
    assert caught.value.field == field and reason in caught.value.reason


def test_form_values_become_a_document_over_the_current_one():
    base = {"name": "t1", "description": "old", "enabled": True, "limits": None, "tags": ["x"]}
    body = THING.body_from_form({"description": "new", "limit_low": 1, "limit_high": None}, base)
    assert body == {**base, "description": "new", "limits": {"low": 1, "high": 9}}
    assert THING.form_fields() == ["description", "enabled", "limit_low", "limit_high", "tags"]


@isolate_apps("configs")
def test_a_described_field_the_model_does_not_declare_is_named():
    class Thing(models.Model):
        name = models.CharField(max_length=10)
        tags = models.JSONField(default=list)

        class Meta:
            app_label = "configs"

        def __str__(self) -> str:
            return self.name

    assert "tags" not in THING.undeclared_columns(Thing)
    assert {"description", "enabled", "limit_high"} <= set(THING.undeclared_columns(Thing))


def test_every_config_type_s_model_declares_each_described_column():
    """No hidden columns: a model declares every column its config type describes (#37: Backend.quota_scheduler
    was added to the model at import time)."""
    undeclared = {
        config_type: handler.schema.undeclared_columns(handler.model)
        for config_type, handler in registry.handlers().items()
        if getattr(handler, "schema", None) is not None and getattr(handler, "model", None) is not None
    }
    assert len(undeclared) >= 6  # every type with a row: POOL, POD_TEMPLATE, …, BACKEND, MACHINE_POOL, NODE_POOL
    assert {config_type: names for config_type, names in undeclared.items() if names} == {}
