"""The pool and platform admin forms in a real browser: key–value rows added and removed, a template picked
and moved up (the order saved is the order shown), the node match changing live as templates are picked,
and the confirmation a save asks for when a platform would match no node. Screenshots of the pool add and
change pages and the platform page at 1440 and 390 px go to var/screenshots/admin-pool-*.png."""

from __future__ import annotations

import re

import pytest

from access.services import roles
from configs import store
from tests.e2e.looks import DESKTOP, PHONE, SHOTS, collect_failures, shoot, sign_in_admin
from tests.integration.test_admin_pool_forms import build_cluster
from tests.selfservice.conftest import person

SAVE = "button[name=_save]"


@pytest.fixture
def world(transactional_db):
    roles.ensure_builtin_roles()  # a transactional test's flush removed the migration's roles
    person("boss", "osmo-admin")
    return build_cluster()


def text_of(page, selector: str) -> str:
    return " ".join(page.text_content(selector).split())


def variables(page) -> list[str]:
    return page.eval_on_selector_all(
        "#id_common_default_variables [name=common_default_variables-key]", "inputs => inputs.map(i => i.value)"
    )


def chosen(page, name: str) -> list[str]:
    return page.eval_on_selector_all(f"[data-op-list] input[name={name}]", "inputs => inputs.map(i => i.value)")


@pytest.mark.django_db(transaction=True)
def test_pool_form_rows_picker_and_live_node_match(page, live_server, world):
    base, failures = live_server.url, collect_failures(page)
    sign_in_admin(page, base, "boss")
    page.goto(f"{base}/admin/pools/pool/{world.pk}/change/")
    panel = "[data-node-match]"
    assert "any: 6 of 7 nodes match; 1 does not" in text_of(page, panel)

    # key–value rows: add one, remove one
    rows = "#id_common_default_variables"
    page.click(f"{rows} [data-kv-add]")
    page.locator(f"{rows} [name=common_default_variables-key]").last.fill("EXTRA")
    page.locator(f"{rows} [name=common_default_variables-value]").last.fill("x")
    team = page.locator(f"{rows} [data-kv-row]").filter(has=page.locator("input[value=TEAM]"))
    team.locator("[data-kv-remove]").click()
    assert "TEAM" not in variables(page) and variables(page)[-1] == "EXTRA"

    # pick two templates: the match follows; move the second up
    page.select_option("#id_common_pod_template [data-op-add]", "h100")
    page.wait_for_function("() => document.querySelector('[data-node-match]').textContent.includes('any: 3 of 7')")
    page.select_option("#id_common_pod_template [data-op-add]", "tolerate")
    page.wait_for_function("() => document.querySelector('[data-node-match]').textContent.includes('any: 4 of 7')")
    page.click("#id_common_pod_template [aria-label='Move tolerate up']")
    assert chosen(page, "common_pod_template") == ["tolerate", "h100"]
    assert page.is_disabled("#id_common_pod_template [data-op-add] option[value=h100]")
    page.click(SAVE)
    page.wait_for_url(f"{base}/admin/pools/pool/")
    shown = store.show("POOL", "train")
    assert shown["common_pod_template"] == ["tolerate", "h100"]
    assert shown["common_default_variables"]["EXTRA"] == "x" and "TEAM" not in shown["common_default_variables"]
    assert failures == []


@pytest.mark.django_db(transaction=True)
def test_a_platform_matching_no_node_asks_before_it_is_saved(page, live_server, world):
    base, failures = live_server.url, collect_failures(page)
    page.set_viewport_size({"width": DESKTOP, "height": 900})
    sign_in_admin(page, base, "boss")
    platform = world.platforms.get(name="h100")
    page.goto(f"{base}/admin/pools/platform/{platform.pk}/change/")
    assert "h100: 3 of 7 nodes match" in text_of(page, "[data-node-match]")
    page.select_option("#id_override_pod_template [data-op-add]", "nowhere")
    page.wait_for_function("() => document.querySelector('[data-node-match]').textContent.includes('no node of 7')")
    page.click(SAVE)
    page.wait_for_selector("input[name=save_anyway]")
    assert "matches no node of the pool's backend" in page.content()
    page.wait_for_function("() => document.querySelector('[data-node-match]').textContent.includes('no node of 7')")
    page.screenshot(path=str(SHOTS / "admin-platform-confirm-1440.png"), full_page=True)
    assert store.show("POOL", "train")["platforms"]["h100"]["override_pod_template"] == ["h100"]  # not saved
    assert chosen(page, "override_pod_template") == ["h100", "nowhere"]  # the form kept what was picked
    page.check("input[name=save_anyway]")
    page.click(SAVE)
    page.wait_for_url(re.compile(r".*/admin/pools/platform/$"))
    assert store.show("POOL", "train")["platforms"]["h100"]["override_pod_template"] == ["h100", "nowhere"]
    page.goto(f"{base}/admin/pools/pool/")
    assert page.locator("#result_list .pool-warning").text_content() == "⚠ platform h100 matches no node"
    page.goto(f"{base}/admin/pools/pool/{world.pk}/change/")
    assert page.locator(".pool-warning").text_content() == "⚠ platform h100 matches no node"
    assert failures == []


@pytest.mark.django_db(transaction=True)
def test_pool_and_platform_pages_at_both_widths(page, live_server, world):
    base, failures = live_server.url, collect_failures(page)
    sign_in_admin(page, base, "boss")
    platform = world.platforms.get(name="h100")
    pages = {
        "admin-pool-add": "/admin/pools/pool/add/",
        "admin-pool-change": f"/admin/pools/pool/{world.pk}/change/",
        "admin-platform-change": f"/admin/pools/platform/{platform.pk}/change/",
    }
    print(f"screenshots in {SHOTS}")
    too_wide = {}
    for name, path in pages.items():
        overflow = shoot(page, f"{base}{path}", name, ready="[data-node-match]")
        if overflow[PHONE]:
            too_wide[name] = overflow[PHONE]
    page.goto(f"{base}{pages['admin-pool-change']}")  # still 390 px wide: the widgets up close
    for widget in ("common_default_variables", "default_exit_actions", "common_pod_template"):
        page.locator(f"#id_{widget}").screenshot(path=str(SHOTS / f"admin-pool-{widget}-390.png"))
    page.locator("[data-node-match]").screenshot(path=str(SHOTS / "admin-pool-node-match-390.png"))
    # the add page asks for the match as soon as a backend is chosen
    page.goto(f"{base}/admin/pools/pool/add/")
    page.select_option("select[name=backend]", str(world.backend_id))
    page.wait_for_function("() => document.querySelector('[data-node-match]').textContent.includes('6 of 7')")
    # the default platform follows the platform rows typed on the page; a new pool saved with one
    page.fill("input[name=name]", "fresh-pool")
    page.click("text=Add another Platform")
    page.fill("input[name=platforms-0-name]", "fresh")
    page.wait_for_selector("select[name=default_platform] option[value=fresh]", state="attached")
    page.select_option("select[name=default_platform]", "fresh")
    row = "#id_platforms-0-default_variables"
    page.fill(f"{row} [name=platforms-0-default_variables-key]", "SHARDS")
    page.fill(f"{row} [name=platforms-0-default_variables-value]", "4")
    page.click(f"{row} [data-kv-add]")
    page.locator(f"{row} [name=platforms-0-default_variables-key]").last.fill("ZONE")
    page.locator(f"{row} [name=platforms-0-default_variables-value]").last.fill("eu-1")
    page.click(SAVE)
    page.wait_for_url(f"{base}/admin/pools/pool/")
    shown = store.show("POOL", "fresh-pool")
    assert shown["default_platform"] == "fresh"
    assert shown["platforms"]["fresh"]["default_variables"] == {"SHARDS": 4, "ZONE": "eu-1"}
    assert failures == []
    assert too_wide == {}, too_wide
