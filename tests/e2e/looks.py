"""How a browser test looks at a page: what went wrong while it loaded, screenshots at both widths, and what
axe-core, the accessibility checker, finds wrong with it.

Every console page gets a test that loads it, collects script errors and failed requests (the favicon
included), and saves a screenshot at 1440 and 390 px into var/screenshots/ for a person to look at.
axe-core is a test peer (tests/e2e/axe, installed by `make test-peers`); `axe_violations` injects it into the
page as it is now and runs every rule of its default set (WCAG 2.x A and AA and best practices).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings

from tests.selfservice.conftest import PASSWORD

PHONE, DESKTOP = 390, 1440
WIDTHS = (DESKTOP, PHONE)
SHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"
AXE = Path(__file__).resolve().parent / "axe" / "node_modules" / "axe-core" / "axe.min.js"
BLOCKING = ("serious", "critical")  # axe's impacts a page must not have; "minor" and "moderate" are reported
# axe's run, summed up: per violated rule its impact, help text and the elements (CSS selectors) that fail it
RUN_AXE = """async () => (await axe.run(document, {resultTypes: ["violations"]})).violations.map(v => ({
  rule: v.id, impact: v.impact, help: v.help, url: v.helpUrl,
  targets: v.nodes.map(n => n.target.join(" ")), why: v.nodes.length ? v.nodes[0].failureSummary : ""}))"""


def collect_failures(*pages) -> list[str]:
    """A list that fills with every script error, uncaught exception and HTTP error of `pages`."""
    failures: list[str] = []
    for page in pages:
        page.on("console", lambda message: message.type == "error" and failures.append(message.text))
        page.on("pageerror", lambda error: failures.append(f"uncaught: {error}"))
        page.on(
            "requestfinished",
            lambda request: (
                (response := request.response())
                and response.status >= 400
                and failures.append(f"{response.status} {request.url}")
            ),
        )
    return failures


def page_overflow(page) -> int:
    """How many pixels the page is wider than the window (0: nothing wider than the screen)."""
    return page.evaluate("() => Math.max(0, document.documentElement.scrollWidth - window.innerWidth)")


def clipped(page, selector: str) -> list[str]:
    """What inside `selector` is cut off (empty: nothing): a scroll container hiding part of its content, or an
    element reaching past the selector's box, each said with its tag, id or class and text."""
    return page.evaluate(
        """(selector) => {
            const root = document.querySelector(selector), box = root.getBoundingClientRect(), found = [];
            const said = (el) =>
                `${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""} "${el.innerText.slice(0, 30)}"`;
            for (const el of root.querySelectorAll("*")) {
                const style = getComputedStyle(el), r = el.getBoundingClientRect();
                if (style.display === "none" || (r.width === 0 && r.height === 0)) continue;
                const hides = el.scrollWidth - el.clientWidth;
                if (["auto", "scroll", "hidden", "clip"].includes(style.overflowX) && hides > 1)
                    found.push(`${said(el)} hides ${hides}px`);
                else if (r.right > box.right + 1 || r.left < box.left - 1) found.push(`${said(el)} past ${selector}`);
            }
            return found;
        }""",
        selector,
    )


def shoot(page, url: str, name: str, *, ready: str | None = None, widths=WIDTHS) -> dict[int, int]:
    """Load `url` at each width, wait for the `ready` selector, save var/screenshots/<name>-<width>.png.

    Returns {width: overflow in px} so a test can assert that nothing is wider than the screen."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    overflow = {}
    for width in widths:
        page.set_viewport_size({"width": width, "height": 844 if width == PHONE else 900})
        page.goto(url)
        if ready:
            page.wait_for_selector(ready)
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
        overflow[width] = page_overflow(page)
    return overflow


def walk(base: str, pages, *, widths=WIDTHS, ours=lambda who, name: True) -> dict[str, int]:
    """Each of `pages`, (browser page, name, path, ready selector), at each width: loaded, waited for, saved as
    var/screenshots/<name>-<width>.png. Returns {"name@width": overflow px} of the pages wider than the screen
    that `ours(who, name)` says are ours to fix (Unfold's own layout is not): {} when all fit."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    too_wide = {}
    for width in widths:
        for who, name, path, ready in pages:
            who.set_viewport_size({"width": width, "height": 844 if width == PHONE else 900})
            who.goto(f"{base}{path}")
            who.wait_for_selector(ready)
            who.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)
            overflow = page_overflow(who)
            if overflow and ours(who, name):
                too_wide[f"{name}@{width}"] = overflow
    return too_wide


def sign_in_admin(page, base: str, username: str, next_path: str = "/admin/") -> None:
    """Sign in through the admin's own login form (a staff user made with tests.selfservice's PASSWORD)."""
    page.goto(f"{base}/admin/login/?next={next_path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}{next_path}")


def axe_violations(page, *, also: tuple[str, ...] = ()) -> list[dict]:
    """axe-core's violations on `page` as it is now: those of impact serious or critical, and any of the rules
    named in `also` whatever their impact. Each: rule, impact, help, url, targets (selectors), why."""
    if not AXE.exists():
        pytest.fail(f"{AXE} is missing: run `make test-peers` (npm ci in tests/e2e/axe)")
    if not page.evaluate("() => typeof window.axe === 'object'"):  # a navigation dropped it
        page.add_script_tag(path=str(AXE))
    return [v for v in page.evaluate(RUN_AXE) if v["impact"] in BLOCKING or v["rule"] in also]


def describe_violations(found: dict[str, list[dict]]) -> str:
    """One paragraph per page: each violated rule with its impact, help, the failing elements and why."""
    lines = []
    for where, violations in found.items():
        lines.append(f"{where}:")
        for v in violations:
            lines.append(f"  {v['impact']} {v['rule']}: {v['help']} ({v['url']})")
            lines.extend(f"    {target}" for target in v["targets"][:10])
            if len(v["targets"]) > 10:
                lines.append(f"    … and {len(v['targets']) - 10} more")
            lines.append("    " + " ".join(v["why"].split())[:300])
    return "\n".join(lines)
