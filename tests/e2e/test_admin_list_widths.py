"""Every admin list fits 1440 px (issue 35, point 5): a browser visits the change list of every model the admin
registers, filled with the simulated cluster's 29 nodes, pools, node pools, a machine pool, workflows, requests
and tokens, and finds no sideways scroll, neither of the page nor of the results table within its container.
At 390 px, where each row is a card of one line per column, no value is cut off (a node pool's deserved /
capacity, a machine pool's hourly cost). Screenshots: var/screenshots/admin-list-<app>-<model>-<width>.png."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

from configs import store
from tests.e2e.looks import DESKTOP, PHONE, collect_failures, shoot, sign_in_admin
from tests.e2e.test_admin_dashboard import admin_world
from tests.machinepools.conftest import gpu_spot
from tests.quotas.conftest import (  # noqa: F401  (fixtures)
    CLI,
    H100_LABEL,
    backend,
    kube_server,
    pools_config,
    synced,
)

pytestmark = pytest.mark.heavy

# scrollWidth of the page against its width; the results table against the box that holds it
WIDTHS = """() => {
  const page = document.scrollingElement, table = document.querySelector('#result_list');
  const box = table && table.parentElement;
  return {page: page.scrollWidth - page.clientWidth, table: box ? table.scrollWidth - box.clientWidth : 0};
}"""

# the cells of the results whose value is cut off (wider or taller than the cell, which hides its overflow)
CUT_OFF = """() => [...document.querySelectorAll('#result_list td')]
  .filter(cell => cell.scrollWidth > cell.clientWidth + 1 || cell.scrollHeight > cell.clientHeight + 1)
  .map(cell => `${cell.dataset.label || cell.className.split(' ')[0]}: ${cell.textContent.trim().slice(0, 60)}`)"""


def changelists() -> list[tuple[str, str]]:
    """(name, url) of every registered model's change list."""
    return sorted(
        (
            f"admin-list-{m._meta.app_label}-{m._meta.model_name}",
            reverse(f"admin:{m._meta.app_label}_{m._meta.model_name}_changelist"),
        )
        for m in admin.site._registry
    )


@pytest.mark.django_db(transaction=True)
def test_every_admin_list_fits_1440_px_and_cuts_no_value_off_at_390(page, live_server, synced):  # noqa: F811
    base = live_server.url
    admin_world(synced)
    store.apply("NODE_POOL", "h100-nodes-of-the-simulated-cluster", {"backend": "sim", "selector": H100_LABEL}, CLI)
    store.apply("BACKEND", "plain", {"description": "no provider: export only"}, CLI)
    store.apply("MACHINE_POOL", "gpu-spot", gpu_spot("plain"), CLI)
    failures = collect_failures(page)
    sign_in_admin(page, base, "root")
    too_wide = {}
    for name, path in changelists():
        shoot(page, f"{base}{path}", name, widths=(DESKTOP,))
        widths = page.evaluate(WIDTHS)
        if widths["page"] > 0 or widths["table"] > 0:
            too_wide[path] = widths
    assert too_wide == {}
    cut_off = {}
    for name, path in changelists():
        shoot(page, f"{base}{path}", name, widths=(PHONE,))
        if cells := page.evaluate(CUT_OFF):
            cut_off[path] = cells
    assert cut_off == {}
    assert failures == []
