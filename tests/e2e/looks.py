"""How a browser test looks at a page: what went wrong while it loaded, and screenshots at both widths.

Every console page gets a test that loads it, collects script errors and failed requests (the favicon
included), and saves a screenshot at 1440 and 390 px into var/screenshots/ for a person to look at.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from tests.selfservice.conftest import PASSWORD

PHONE, DESKTOP = 390, 1440
WIDTHS = (DESKTOP, PHONE)
SHOTS = Path(settings.BASE_DIR) / "var" / "screenshots"


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


def sign_in_admin(page, base: str, username: str, next_path: str = "/admin/") -> None:
    """Sign in through the admin's own login form (a staff user made with tests.selfservice's PASSWORD)."""
    page.goto(f"{base}/admin/login/?next={next_path}")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}{next_path}")
