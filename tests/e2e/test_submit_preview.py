"""Submit with preview in a real browser: sign in with a local account, open a pool, edit the YAML,
Preview (htmx) shows the resolved pod and the node verdict, Submit lands on the workflow page. Both post the
form as multipart/form-data (Django then decodes no %XX of the spec), and both work without JavaScript."""

from __future__ import annotations

import re

import pytest

from tests.e2e.looks import collect_failures
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures)
from tests.selfservice.conftest import PASSWORD, TRAINING, demo_world  # noqa: F401  (fixture)
from workflows.models import Workflow

CATALOG_SHOT = "/tmp/selfservice-catalog.png"
PREVIEW_SHOT = "/tmp/selfservice-preview.png"


def sign_in(page, base: str, username: str, next_path: str = "/") -> None:
    page.goto(f"{base}{next_path}")
    page.wait_for_url(re.compile(r"/login/\?next="))
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("#login-form button[type=submit]")
    page.wait_for_url(f"{base}{next_path}")


@pytest.mark.django_db(transaction=True)
def test_submit_with_preview(page, live_server, demo_world):  # noqa: F811
    base = live_server.url
    failures = collect_failures(page)  # a resource that did not load (the favicon included) or a script error
    posted = []  # (path, Content-Type) of every form the page posts
    page.on("request", lambda r: r.method == "POST" and posted.append((r.url[len(base) :], r.headers["content-type"])))
    sign_in(page, base, "researcher")
    page.wait_for_selector(f'#pool-{TRAINING}[data-usable="yes"]')
    page.screenshot(path=CATALOG_SHOT, full_page=True)

    page.click(f"#pool-{TRAINING} h2 a")
    page.wait_for_url(f"{base}/pools/{TRAINING}/")
    assert "h100-node-0" in page.text_content("#platform-h100-platform")
    page.click("#submit-button")
    page.wait_for_url(f"{base}/pools/{TRAINING}/submit/")
    page.wait_for_function("() => window.htmx !== undefined")  # vendored htmx loaded from /static/

    spec = page.input_value("#spec-editor")
    assert "platform: h100-platform" in spec
    edited = spec.replace("name: hello-robotics-training", "name: browser-check").replace("gpu: 1", "gpu: 2")
    page.fill("#spec-editor-code .cm-content", edited)  # the code editor (the textarea follows it)
    assert page.input_value("#spec-editor") == edited
    page.click("#preview-button")
    verdict = page.wait_for_selector("#verdict-main")
    assert verdict.get_attribute("data-verdict") == "fits"
    assert "Would start now: 4 nodes can take it" in verdict.text_content()
    pod = page.text_content("#pod-main")
    assert "nvidia.com/gpu" in pod and "template training_h100_template" in pod
    assert page.url == f"{base}/pools/{TRAINING}/submit/"  # htmx swapped the preview in place
    page.screenshot(path=PREVIEW_SHOT, full_page=True)
    assert not Workflow.objects.exists()

    page.click("#submit-workflow")
    page.wait_for_url(f"{base}/workflows/browser-check-1/")
    assert page.text_content("h1").strip() == "browser-check-1"
    page.wait_for_selector("#workflow-status-badge")
    assert page.is_visible("#task-main")
    workflow = Workflow.objects.get()
    assert workflow.workflow_id == "browser-check-1" and workflow.submitted_by.username == "researcher"
    assert workflow.tasks.get().pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] in (2, "2")
    assert failures == []
    sent = {path: kind.split(";")[0] for path, kind in posted if path.startswith(f"/pools/{TRAINING}/")}
    assert sent == {
        f"/pools/{TRAINING}/submit/preview/": "multipart/form-data",
        f"/pools/{TRAINING}/submit/": "multipart/form-data",
    }


@pytest.mark.django_db(transaction=True)
def test_preview_and_submit_without_javascript(browser, live_server, demo_world):  # noqa: F811
    """The plain form: Preview posts it to the preview page (its formaction), which answers the whole page
    with the preview and the spec kept in the editor; Submit posts it to the submit page."""
    context = browser.new_context(java_script_enabled=False)
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        base = live_server.url
        sign_in(page, base, "researcher", f"/pools/{TRAINING}/submit/")
        spec = page.input_value("#spec-editor").replace("name: hello-robotics-training", "name: no-script")
        page.fill("#spec-editor", spec)
        page.click("#preview-button")
        page.wait_for_url(f"{base}/pools/{TRAINING}/submit/preview/")
        assert page.get_attribute("#verdict-main", "data-verdict") == "fits"
        assert page.input_value("#spec-editor") == spec and not Workflow.objects.exists()
        page.click("#submit-workflow")
        page.wait_for_url(f"{base}/workflows/no-script-1/")
        assert Workflow.objects.get().workflow_id == "no-script-1"
    finally:
        context.close()
