"""Browser tests: Playwright (Python) driving Debian's chromium, headless, loopback only.

- chromium comes from Debian (`make install` runs `apt-get install chromium` when it is missing);
  never `playwright install`.
- Every request that is not for 127.0.0.1 is aborted (the IdP's pages import web fonts from the internet).
- Playwright's sync API runs an event loop in this thread, so Django's ORM would refuse to run in the
  test body: DJANGO_ALLOW_ASYNC_UNSAFE is set for these tests.
- The live server listens on the port the test IdP knows as a redirect URI (tests/oidc/fixtures.py).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.oidc.idp import LIVE_SERVER_PORT

os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
os.environ["DJANGO_LIVE_TEST_SERVER_ADDRESS"] = f"127.0.0.1:{LIVE_SERVER_PORT}"

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make install` installs Debian's chromium (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


def _loopback_only(route):
    if urlsplit(route.request.url).hostname == "127.0.0.1":
        route.continue_()
    else:
        route.abort()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context()
    context.route("**/*", _loopback_only)
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


@pytest.fixture
def new_page(browser, live_server):
    """Several people in one test: each call opens a page in a fresh browser context (its own cookies)."""
    contexts = []

    def make():
        context = browser.new_context()
        context.route("**/*", _loopback_only)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(15_000)
        return page

    yield make
    for context in contexts:
        context.close()
