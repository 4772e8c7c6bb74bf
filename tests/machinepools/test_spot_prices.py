"""Spot prices (issue #33, "Spot done right"): the shipped table with each figure's source and date, the admin's
figures and per-backend overrides with theirs, the cost of a machine pool now and at max (spot against on-demand,
the saving), and bad prices and dates refused at every door with nothing written (docs/usage.md#cost)."""

from __future__ import annotations

import json
from datetime import date, timedelta
from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils.timezone import localdate

from clusters.machinepools import catalog, pricing
from clusters.machinepools.instance_types import instance_type
from clusters.machinepools.spec import MachinePoolSpec
from clusters.models import Backend, InstanceType
from usage.models import PriceOverride
from usage.services import prices

pytestmark = pytest.mark.django_db


@pytest.fixture
def backend():
    return Backend.objects.create(name="aws")


@pytest.fixture(autouse=True)
def ratio(settings):
    settings.USAGE_SPOT_PRICE_RATIO = 0.35


def test_every_shipped_spot_figure_names_its_source_and_date_and_is_no_dearer_than_on_demand():
    document = json.loads(pricing.SPOT_TABLE.read_text())
    shipped = catalog.shipped()
    assert document["prices"], "the table is small, not empty"
    for row in document["prices"]:
        source = document["sources"][row["source"]]
        assert source["url"].startswith("https://") and source["title"]
        date.fromisoformat(source["read_on"])  # a real date, not "recently"
        assert row["estimate"] is True  # nothing here is a current price: said so
        price, on_demand = Decimal(row["hourly_price"]), shipped[row["instance_type"]].hourly_price
        assert row["region"] == catalog.region() and 0 < price <= on_demand, row
        assert -price.as_tuple().exponent <= 3  # as the source printed it: no digit added


def test_a_spot_price_says_where_it_comes_from_first_found_wins(backend):
    c5 = pricing.spot_price("c5.2xlarge", instance_type("c5.2xlarge"))
    assert c5 == pricing.Price(
        Decimal("0.170"),
        "spot estimate for us-east-1: Amazon EC2 Auto Scaling User Guide, 'Spot price per unit hour example', "
        "read 2026-12-02",
        estimate=True,
    )
    g4dn = pricing.spot_price("g4dn.xlarge", instance_type("g4dn.xlarge"))  # no row: on-demand × ratio, to the cent
    assert (g4dn.hourly, g4dn.estimate) == (Decimal("0.18"), True)
    assert g4dn.source.startswith("spot estimate: the on-demand price × 0.35")
    other_region = pricing.spot_price("c5.2xlarge", instance_type("c5.2xlarge"), region="eu-west-1")
    assert (other_region.hourly, other_region.estimate) == (Decimal("0.12"), True)  # 0.34 × 0.35: no row there
    InstanceType.objects.create(
        name="g4dn.xlarge", vcpu=4, memory_mib=16384, gpu_count=1, gpu_model="T4", hourly_price=Decimal("0.526"),
        spot_hourly_price=Decimal("0.2103"), note="spot price history, us-east-1a", prices_as_of=date(2026, 11, 30),
    )  # fmt: skip
    recorded = pricing.spot_price("g4dn.xlarge", instance_type("g4dn.xlarge"))
    assert recorded == pricing.Price(
        Decimal("0.2103"),
        "spot price from the instance-type catalog (spot price history, us-east-1a; as of 2026-11-30)",
    )
    PriceOverride.objects.create(
        backend=backend, instance_type="g4dn.xlarge", spot_hourly=Decimal("0.19"), note="EDP", as_of=date(2026, 12, 1)
    )
    assert prices.node_price(backend.pk, "g4dn.xlarge", spot=True) == prices.NodePrice(
        Decimal("0.19"), "spot price set for this backend (EDP; as of 2026-12-01)"
    )
    assert prices.node_price(backend.pk, "g4dn.xlarge", spot=False).hourly == Decimal("0.526")  # the catalog's
    unsold = pricing.spot_price("p6-b200.48xlarge", instance_type("p6-b200.48xlarge"))
    assert unsold.hourly is None and "no spot price" in unsold.source


def test_usage_prices_spot_capacity_at_the_spot_figure_and_says_its_source(backend):
    from usage.services.record import SPOT_LABELS

    assert SPOT_LABELS["node.kubernetes.io/capacity-type"] == "spot"
    price = prices.node_price(backend.pk, "c5.4xlarge", spot=True)
    assert price.hourly == Decimal("0.318") and "Spot price per unit hour example" in price.source
    assert prices.hourly_cost_micros(price, Decimal("0.5")) == 159_000  # half the node: $0.159 an hour


def spec(**fields) -> MachinePoolSpec:
    return MachinePoolSpec(**{"name": "gpu", "instance_type": "g4dn.xlarge", "min_replicas": 0, "max_replicas": 3,
                              "spot": True, **fields})  # fmt: skip


def test_a_spot_pools_cost_now_and_at_max_against_on_demand_and_the_saving():
    cost = pricing.pool_cost(spec(), instance_type("g4dn.xlarge"), nodes_now=2)
    assert cost.each.hourly == Decimal("0.18") and cost.each.estimate
    assert cost.saving_each == Decimal("0.346") and cost.saving_percent == 66  # (0.526 - 0.18) / 0.526
    figures = cost.as_dict()
    assert (figures["now"], figures["at_max"]) == ("0.36", "0.54")
    assert (figures["on_demand_now"], figures["on_demand_at_max"]) == ("1.052", "1.578")
    assert cost.line().startswith("≈ $0.36 / $0.54 per hour spot (spot estimate: the on-demand price × 0.35")
    assert cost.line().endswith("; on-demand $1.05 / $1.58, saving 66%")
    capped = pricing.pool_cost(spec(max_price=Decimal("0.15")), instance_type("g4dn.xlarge"), nodes_now=1)
    assert capped.each.hourly == Decimal("0.15") and capped.saving_percent == 71  # never above its max price
    on_demand = pricing.pool_cost(spec(spot=False), instance_type("g4dn.xlarge"), nodes_now=2)
    assert on_demand.line() == "$1.05 / $1.58 per hour" and on_demand.saving_each is None
    unknown = pricing.pool_cost(spec(instance_type="x9.huge"), None, nodes_now=0)
    assert unknown.line() == "price unknown (no price: instance type x9.huge is not in the catalog)"


def test_an_override_prices_the_machine_pool_admin_as_it_prices_usage(backend, admin_client):
    from tests.factories import MachinePoolFactory

    pool = MachinePoolFactory(backend=backend, name="gpu")
    PriceOverride.objects.create(backend=backend, instance_type="g4dn.xlarge", spot_hourly=Decimal("0.2"), note="EDP")
    page = admin_client.get(reverse("admin:clusters_machinepool_change", args=[pool.pk])).content.decode()
    assert "$0.00 / $0.60 per hour spot (spot price set for this backend (EDP))" in page
    assert "on-demand $0.00 / $1.58, saving 62%" in page


BAD_PRICES = [
    ("-1", "is not a positive USD amount per hour"),
    ("0", "is not a positive USD amount per hour"),
    ("5000", "is above 1000 USD per hour"),
]
BAD_DATES = [
    ("2025-13-45", "Enter a valid date"),
    ((localdate() + timedelta(days=2)).isoformat(), "is in the future"),
    ("2001-01-01", "is before EC2 began (2006-08-25)"),
]


def _refused(admin_client, url, data, field, reason, model):
    before = model.objects.count()
    response = admin_client.post(url, data)
    assert response.status_code == 200, "the form again, with its errors"
    errors = " ".join(response.context["adminform"].form.errors.get(field, []))
    assert reason in errors, (field, data[field], errors)
    assert model.objects.count() == before  # nothing written


@pytest.mark.parametrize("field", ["hourly_price", "spot_hourly_price"])
@pytest.mark.parametrize(("value", "reason"), BAD_PRICES)
def test_the_instance_type_form_refuses_bad_prices(admin_client, field, value, reason):
    data = {"name": "g6.xlarge", "vcpu": "4", "memory_mib": "16384", "arch": "amd64", "gpu_count": "1",
            "gpu_model": "L4", "gpu_memory_mib": "0", "hourly_price": "0.8048", "spot_hourly_price": "0.3",
            field: value}  # fmt: skip
    _refused(admin_client, reverse("admin:clusters_instancetype_add"), data, field, f"{value} {reason}", InstanceType)


@pytest.mark.parametrize(("value", "reason"), BAD_DATES)
def test_the_instance_type_form_refuses_bad_dates(admin_client, value, reason):
    data = {"name": "g6.xlarge", "vcpu": "4", "memory_mib": "16384", "arch": "amd64", "gpu_count": "0",
            "gpu_memory_mib": "0", "hourly_price": "0.8048", "prices_as_of": value}  # fmt: skip
    _refused(admin_client, reverse("admin:clusters_instancetype_add"), data, "prices_as_of", reason, InstanceType)


def test_a_spot_price_above_on_demand_is_refused_at_the_forms_and_in_the_database(admin_client, backend):
    data = {"name": "g6.xlarge", "vcpu": "4", "memory_mib": "16384", "arch": "amd64", "gpu_count": "0",
            "gpu_memory_mib": "0", "hourly_price": "0.8", "spot_hourly_price": "0.9"}  # fmt: skip
    reason = "0.9 is above the on-demand price 0.8: AWS charges a Spot Instance at most the On-Demand price"
    _refused(admin_client, reverse("admin:clusters_instancetype_add"), data, "spot_hourly_price", reason, InstanceType)
    override = {"backend": backend.pk, "instance_type": "g6.xlarge", "on_demand_hourly": "0.8", "spot_hourly": "0.9"}
    _refused(admin_client, reverse("admin:usage_priceoverride_add"), override, "spot_hourly", reason, PriceOverride)
    for make in (
        lambda: InstanceType.objects.create(
            name="g6.xlarge", vcpu=4, memory_mib=1, hourly_price=Decimal("0.8"), spot_hourly_price=Decimal("0.9")
        ),
        lambda: InstanceType.objects.create(name="g6.xlarge", vcpu=4, memory_mib=1, hourly_price=Decimal("5000")),
        lambda: PriceOverride.objects.create(backend=backend, instance_type="g6.xlarge", spot_hourly=Decimal("-1")),
    ):
        with pytest.raises(IntegrityError), transaction.atomic():
            make()
    assert not InstanceType.objects.exists() and not PriceOverride.objects.exists()


@pytest.mark.parametrize("field", ["on_demand_hourly", "spot_hourly"])
@pytest.mark.parametrize(("value", "reason"), BAD_PRICES)
def test_the_price_override_form_refuses_bad_prices(admin_client, backend, field, value, reason):
    data = {"backend": backend.pk, "instance_type": "g4dn.xlarge", "on_demand_hourly": "", "spot_hourly": "",
            field: value}  # fmt: skip
    _refused(admin_client, reverse("admin:usage_priceoverride_add"), data, field, f"{value} {reason}", PriceOverride)


@pytest.mark.parametrize(("value", "reason"), BAD_DATES)
def test_the_price_override_form_refuses_bad_dates(admin_client, backend, value, reason):
    data = {"backend": backend.pk, "instance_type": "g4dn.xlarge", "spot_hourly": "0.2", "as_of": value}
    _refused(admin_client, reverse("admin:usage_priceoverride_add"), data, "as_of", reason, PriceOverride)


def test_a_good_override_with_its_date_is_saved_and_listed(admin_client, backend):
    data = {"backend": backend.pk, "instance_type": "g4dn.xlarge", "spot_hourly": "0.2", "note": "EDP",
            "as_of": "2026-11-30"}  # fmt: skip
    response = admin_client.post(reverse("admin:usage_priceoverride_add"), data)
    assert response.status_code == 302
    assert PriceOverride.objects.get().as_of == date(2026, 11, 30)
