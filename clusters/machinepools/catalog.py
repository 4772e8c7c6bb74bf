"""The instance-type catalog shipped in the repository (`instance_types.json`, its source named inside):
read once, pure. Types an admin adds or overrides live in `clusters.models.InstanceType`;
`clusters.machinepools.instance_types.catalog()` merges the two."""

from __future__ import annotations

import json
from decimal import Decimal
from functools import cache
from pathlib import Path

from clusters.machinepools.spec import InstanceType

DATA = Path(__file__).with_name("instance_types.json")


@cache
def shipped() -> dict[str, InstanceType]:
    document = json.loads(DATA.read_text())
    return {row["name"]: _instance(row) for row in document["instance_types"]}


def source() -> str:
    return json.loads(DATA.read_text())["source"]


def regions_source() -> str:
    """Where the `regions` of the types that list them come from."""
    return json.loads(DATA.read_text())["regions_source"]


@cache
def region() -> str:
    """The AWS region the shipped prices are for."""
    return json.loads(DATA.read_text())["region"]


def _instance(row: dict) -> InstanceType:
    price = row.get("hourly_price")
    return InstanceType(
        **{**row, "hourly_price": None if price is None else Decimal(price), "regions": tuple(row.get("regions", ()))}
    )
