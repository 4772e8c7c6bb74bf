"""Cost (docs/usage.md#cost): a node's hourly price and where it comes from, an attempt's dominant share of it,
and the cost a rollup sums."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from clusters.models import Backend, InstanceType
from quotas.services.deserved_samples import sample_deserved
from tests.factories import DepartmentFactory, ProjectFactory
from tests.usage.factories import T0, attempt_row
from usage.models import DeservedSample, PriceOverride, UsageRollup
from usage.services import prices, rollup

pytestmark = pytest.mark.django_db


@pytest.fixture
def backend():
    return Backend.objects.create(name="aws")


def test_the_price_comes_from_the_override_then_the_catalog_then_an_estimate(backend, settings):
    settings.USAGE_SPOT_PRICE_RATIO = 0.35
    on_demand = prices.node_price(backend.pk, "p4de.24xlarge", spot=False)
    assert on_demand.hourly > 0 and on_demand.source == "on-demand price from the instance-type catalog"
    spot = prices.node_price(backend.pk, "p4de.24xlarge", spot=True)
    assert spot.hourly == (on_demand.hourly * Decimal("0.35")).quantize(Decimal("0.01"))  # an estimate, to the cent
    assert "spot estimate" in spot.source and "USAGE_SPOT_PRICE_RATIO" in spot.source
    InstanceType.objects.create(
        name="p4de.24xlarge", vcpu=96, memory_mib=1179648, gpu_count=8, gpu_model="A100-80GB",
        hourly_price=Decimal("27.4470"), spot_hourly_price=Decimal("9.1000"),
    )  # fmt: skip
    assert prices.node_price(backend.pk, "p4de.24xlarge", spot=True) == prices.NodePrice(
        Decimal("9.1000"), "spot price from the instance-type catalog"
    )
    PriceOverride.objects.create(backend=backend, instance_type="p4de.24xlarge", spot_hourly=Decimal("8"), note="EDP")
    assert prices.node_price(backend.pk, "p4de.24xlarge", spot=True) == prices.NodePrice(
        Decimal("8"), "spot price set for this backend (EDP)"
    )
    # the override sets no on-demand price: the catalog's stands
    assert prices.node_price(backend.pk, "p4de.24xlarge", spot=False).hourly == Decimal("27.4470")
    assert prices.node_price(backend.pk, "", spot=False).hourly is None
    assert "not in the catalog" in prices.node_price(backend.pk, "x9.huge", spot=False).source


@pytest.mark.parametrize(
    ("asked", "allocatable", "share"),
    [
        ({"gpu": 2, "cpu": 4000, "memory": 1 << 30}, {"gpu": 8, "cpu": 96000, "memory": 1 << 40}, Decimal("0.25")),
        ({"gpu": 0, "cpu": 48000, "memory": 0}, {"gpu": 8, "cpu": 96000, "memory": 1 << 40}, Decimal("0.5")),
        ({"gpu": 0, "cpu": 1000, "memory": 8 << 30}, {"gpu": 0, "cpu": 4000, "memory": 16 << 30}, Decimal("0.5")),
        ({"gpu": 16}, {"gpu": 8}, Decimal(1)),  # never above the whole node
        ({"gpu": 1}, {}, Decimal(0)),  # the node offers nothing asked
    ],
)
def test_an_attempt_pays_its_dominant_share(asked, allocatable, share):
    assert prices.dominant_share(asked, allocatable) == share


def test_cost_adds_up_per_second_of_the_share():
    price = prices.NodePrice(Decimal("32.7726"), "catalog")
    hourly = prices.hourly_cost_micros(price, Decimal("0.25"))  # 2 of 8 GPUs
    assert hourly == 8_193_150
    attempt_row(started_at=T0, ended_at=T0 + timedelta(minutes=90), gpu=2, hourly_cost_micros=hourly)
    rollup.roll_up(T0 + timedelta(days=1), repair=False)
    [day] = UsageRollup.objects.filter(granularity="day")
    assert day.cost_micros == hourly + hourly * 1800 // 3600  # $12.29 for an hour and a half


def test_deserved_is_sampled_once_an_hour(backend):
    from quotas.models import NodePool, Quota

    project = ProjectFactory(department=DepartmentFactory(name="rnd"), name="train")
    pool = NodePool.objects.create(
        name="a100", backend=backend, selector_kind="label", label_key="gpu", label_value="a100"
    )
    Quota.objects.update_or_create(node_pool=pool, project=project, resource="gpu", defaults={"deserved": 8})
    ProjectFactory(name="idle")  # deserves nothing: no sample
    assert sample_deserved(now=T0 + timedelta(minutes=5)) == 1
    assert sample_deserved(now=T0 + timedelta(minutes=50)) == 0
    assert list(DeservedSample.objects.values_list("hour", "node_pool", "project", "department", "gpu_deserved")) == [
        (T0, "a100", "train", "rnd", 8)
    ]
