"""The machine pool admin form in a real browser: taints as rows (key, value, effect), one added, one edited,
one removed and saved as one revision; an effect the select does not offer (a crafted post) refused on the
field, naming the row; no script error; the rows fit a phone's width. Screenshots of the change page at
1440 and 390 px go to var/screenshots/admin-machine-pool-*.png."""

from __future__ import annotations

import pytest

from access.services import roles
from clusters.models import MachinePool
from configs import revisions, store
from tests.e2e.looks import PHONE, SHOTS, collect_failures, shoot, sign_in_admin
from tests.machinepools.conftest import CLI, gpu_spot
from tests.selfservice.conftest import person

SAVE = "button[name=_save]"
ROWS = "#id_taints"


@pytest.fixture
def change_url(transactional_db):
    roles.ensure_builtin_roles()  # a transactional test's flush removed the migration's roles
    person("boss", "osmo-admin")
    store.apply("BACKEND", "plain", {"description": "no provider: export only"}, CLI)
    store.apply("MACHINE_POOL", "gpu-spot", gpu_spot("plain"), CLI)
    return f"/admin/clusters/machinepool/{MachinePool.objects.get().pk}/change/"


def taint_keys(page) -> list[str]:
    return page.eval_on_selector_all(f"{ROWS} [name=taints-key]", "inputs => inputs.map(i => i.value)")


@pytest.mark.django_db(transaction=True)
def test_taint_rows_add_edit_remove_and_a_refused_effect(page, live_server, change_url):
    base, failures = live_server.url, collect_failures(page)
    sign_in_admin(page, base, "boss")
    page.goto(f"{base}{change_url}")
    assert taint_keys(page) == ["nvidia.com/gpu", "spot", ""]
    page.locator(f"{ROWS} [data-kv-row]").filter(has=page.locator("input[value=spot]")).locator(
        "[data-kv-remove]"
    ).click()
    page.locator(f"{ROWS} [name=taints-value]").first.fill("present")
    page.locator(f"{ROWS} [name=taints-key]").last.fill("team")
    page.locator(f"{ROWS} [name=taints-value]").last.fill("robotics")
    page.locator(f"{ROWS} [name=taints-effect]").last.select_option("NoExecute")
    page.click(f"{ROWS} [data-kv-add]")  # a blank row more: skipped on save
    assert taint_keys(page) == ["nvidia.com/gpu", "team", ""]
    page.click(SAVE)
    page.wait_for_url(f"{base}/admin/clusters/machinepool/")
    assert store.show("MACHINE_POOL", "gpu-spot")["taints"] == [
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "team", "value": "robotics", "effect": "NoExecute"},
    ]
    assert len(revisions.history("MACHINE_POOL", "gpu-spot")) == 2  # the CLI's, then this one save

    # an effect the select does not offer (as a crafted post would send it): refused on the field, row named
    page.goto(f"{base}{change_url}")
    page.eval_on_selector(
        f"{ROWS} [name=taints-effect]", "select => { select.add(new Option('Sometimes', 'Sometimes', true, true)); }"
    )
    page.click(SAVE)
    page.wait_for_selector(f"{ROWS} .kv-invalid")
    assert "Taint 1, effect 'Sometimes': a taint's effect is one of NoSchedule, PreferNoSchedule, NoExecute" in (
        page.text_content("body")
    )
    assert len(revisions.history("MACHINE_POOL", "gpu-spot")) == 2
    assert failures == []


@pytest.mark.django_db(transaction=True)
def test_the_change_page_at_both_widths(page, live_server, change_url):
    base, failures = live_server.url, collect_failures(page)
    sign_in_admin(page, base, "boss")
    print(f"screenshots in {SHOTS}")
    shoot(page, f"{base}{change_url}", "admin-machine-pool-change", ready=ROWS)
    # still 390 px wide: the rows up close, nothing in them wider than the field
    page.locator(ROWS).screenshot(path=str(SHOTS / f"admin-machine-pool-taints-{PHONE}.png"))
    wider = page.eval_on_selector(ROWS, "rows => rows.scrollWidth - rows.clientWidth")
    right = page.eval_on_selector(ROWS, "rows => rows.getBoundingClientRect().right")
    assert wider <= 0 and right <= PHONE
    assert failures == []
