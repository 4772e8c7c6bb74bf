"""The code editor in a real browser (static/portal/vendor/editor.js, built by `make install`): the submit
page's spec and the admin's pod templates get line numbers, highlighting, a syntax check as you type and
the server's errors at their line; an example chip asks before it replaces edits and marks itself; Preview
shows that it is working. Screenshots at 1440 and 390 px go to var/screenshots/editor-*.png."""

from __future__ import annotations

import pytest
from django.conf import settings

from pools.models import PodTemplate
from tests.e2e.looks import PHONE, SHOTS, WIDTHS, collect_failures, shoot, sign_in_admin
from tests.e2e.test_submit_preview import sign_in
from tests.integration.conftest import demo_pools, reference_config  # noqa: F401  (fixtures)
from tests.selfservice.conftest import TRAINING, demo_world  # noqa: F401  (fixture)

BUNDLE = settings.BASE_DIR / "static" / "portal" / "vendor" / "editor.js"
EDITOR = "#spec-editor-code"
FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"  # 2 frames drawn
SPEC = """\
version: 2
workflow:
  name: editor-check
  resources:
    default: {cpu: 8, gpu: 1, memory: lots, storage: 100Gi}
  tasks:
  - name: main
    image: nvcr.io/nvidia/pytorch:24.01-py3
    command: [python, train.py]
"""


@pytest.fixture(autouse=True)
def built_editor():
    assert BUNDLE.exists(), f"{BUNDLE} is missing: `make install` (or `make editor`) builds it from frontend/editor"


def inline_messages(page, editor: str) -> list[tuple[str, str]]:
    """(text of the line above, message) for every message the editor shows under a line."""
    return page.eval_on_selector_all(
        f"{editor} .cm-inline-message",
        "els => els.map(e => [e.previousElementSibling ? e.previousElementSibling.textContent : '', e.textContent])",
    )


def screenshot(page, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 844 if width == PHONE else 900})
        page.evaluate(FRAMES)  # the editor lays itself out again for the new width
        page.screenshot(path=str(SHOTS / f"{name}-{width}.png"), full_page=True)


def wait_for_message(page, editor: str, text: str) -> None:
    page.wait_for_function(
        "([editor, text]) => [...document.querySelectorAll(editor + ' .cm-inline-message')]"
        ".some(e => e.textContent.includes(text))",
        arg=[editor, text],
    )


@pytest.mark.django_db(transaction=True)
def test_the_submit_editor(page, live_server, demo_world):  # noqa: F811
    base = live_server.url
    failures = collect_failures(page)
    sign_in(page, base, "researcher")
    url = f"{base}/pools/{TRAINING}/submit/"
    overflow = shoot(page, url, "editor-submit", ready=f"{EDITOR} .cm-content")
    assert overflow == {1440: 0, 390: 0}
    assert page.is_hidden("#spec-editor")  # upgraded: the textarea stays in the form, hidden
    assert page.locator(f"{EDITOR} .cm-lineNumbers .cm-gutterElement").count() > 20
    assert page.locator(f"{EDITOR} .cm-line span[class]").count() > 10  # keys, values, comments coloured
    box = page.locator(EDITOR).bounding_box()
    assert box["width"] <= 390 - 24 and box["height"] < 844  # fits the phone, scrolls inside itself

    page.set_viewport_size({"width": 1440, "height": 900})
    editor_width = page.locator(EDITOR).bounding_box()["width"]
    assert editor_width > 500  # the page is wide: the editor too

    # a syntax error, typed: marked at its line while typing, nothing sent
    page.click(f"{EDITOR} .cm-line >> nth=2")  # `version: 2`, after the example's comments
    page.keyboard.press("End")
    page.keyboard.type(": oops")
    wait_for_message(page, EDITOR, "ested mappings")
    [(line, message)] = inline_messages(page, EDITOR)
    assert line == "version: 2: oops" and "are not allowed" in message
    assert page.locator(f"{EDITOR} .cm-gutter-lint .cm-lint-marker-error").count() == 1
    assert page.input_value("#spec-editor").count(": oops") == 1  # the form's field follows the editor

    # a spec the server refuses: its error at its line; it goes once the spec changes
    page.fill(f"{EDITOR} .cm-content", SPEC)
    page.click("#preview-button")
    page.wait_for_selector("#submit-error")
    wait_for_message(page, EDITOR, "memory")
    [(line, message)] = inline_messages(page, EDITOR)
    assert "memory: lots" in line and "is not a Kubernetes quantity" in message
    screenshot(page, "editor-submit-error")
    page.click(f"{EDITOR} .cm-line >> nth=0")
    page.keyboard.press("End")
    page.keyboard.type(" ")
    page.wait_for_selector("#submit-error", state="detached")
    page.wait_for_selector(f"{EDITOR} .cm-inline-message", state="detached")

    # Preview shows that it works, then the verdict; the button comes back
    held = []
    page.route("**/submit/preview/", lambda route: held.append(route))
    page.fill(f"{EDITOR} .cm-content", SPEC.replace("memory: lots", "memory: 64Gi"))
    with page.expect_request("**/submit/preview/"):  # sent (and so routed: the route comes with it), not yet answered
        page.click("#preview-button")
    page.wait_for_function("() => document.querySelector('#preview-button').textContent === 'Previewing…'")
    assert page.is_disabled("#preview-button") and page.is_disabled("#submit-workflow")
    assert page.is_visible("#preview-busy")
    [route] = held
    route.continue_()
    page.wait_for_selector("#verdict-main")
    page.wait_for_function("() => document.querySelector('#preview-button').textContent === 'Preview'")
    assert page.is_enabled("#preview-button")
    page.unroute("**/submit/preview/")

    # an example chip asks before replacing edits: no keeps them, yes replaces them and marks the chip
    answers, asked = ["dismiss"], []

    def answer(dialog):
        asked.append(dialog.message)
        dialog.dismiss() if answers.pop(0) == "dismiss" else dialog.accept()

    page.on("dialog", answer)
    edited = page.input_value("#spec-editor")
    page.click('.chip[data-example="group"]')
    assert len(asked) == 1 and "Replace your edits" in asked[0]
    assert page.input_value("#spec-editor") == edited
    assert page.get_attribute('.chip[data-example="group"]', "aria-pressed") == "false"
    answers.append("accept")
    page.click('.chip[data-example="group"]')
    page.wait_for_function("() => document.querySelector('#spec-editor').value.includes('groups:')")
    page.wait_for_selector('.chip[data-example="group"][aria-pressed="true"]')
    assert page.locator('.chip[aria-pressed="true"]').count() == 1
    page.wait_for_selector(f"{EDITOR} .cm-content")  # the new text is in the editor again
    assert "groups:" in page.text_content(f"{EDITOR} .cm-content")
    assert len(asked) == 2
    page.click('.chip[data-example="single-a100-platform"]')  # untouched example: no question
    page.wait_for_selector('.chip[data-example="single-a100-platform"][aria-pressed="true"]')
    assert len(asked) == 2
    assert page.locator("#submit-error").count() == 0  # no error of an earlier text remains

    # Submit shows that it works until the workflow's page opens (the buttons' state, kept across the page change)
    page.evaluate(
        """() => document.addEventListener('submit', () => setTimeout(() => sessionStorage.setItem('buttons',
            JSON.stringify([document.querySelector('#submit-workflow').textContent,
                            document.querySelector('#submit-workflow').disabled,
                            document.querySelector('#preview-button').disabled]))))"""
    )
    page.click("#submit-workflow")
    page.wait_for_url(f"{base}/workflows/**")
    assert page.evaluate("() => JSON.parse(sessionStorage.getItem('buttons'))") == ["Submitting…", True, True]
    assert failures == []


@pytest.mark.django_db(transaction=True)
def test_the_admin_pod_template_editor(page, live_server, demo_world):  # noqa: F811
    base = live_server.url
    failures = collect_failures(page)
    template = PodTemplate.objects.order_by("name").first()
    path = f"/admin/pools/podtemplate/{template.pk}/change/"
    sign_in_admin(page, base, "boss", next_path=path)
    editor = "#id_body-code"
    overflow = shoot(page, f"{base}{path}", "editor-admin-pod-template", ready=f"{editor} .cm-content")
    assert overflow[390] == 0
    assert page.is_hidden("#id_body")
    assert page.locator(f"{editor} .cm-line span[class]").count() > 0

    page.set_viewport_size({"width": 1440, "height": 900})
    page.fill(f"{editor} .cm-content", "spec:\n  nodeSelector: {a: b}\nspecs: {}\n")
    page.click("button[name=_save]")
    wait_for_message(page, editor, "allowed top-level fields")
    [(line, message)] = inline_messages(page, editor)
    assert line == "specs: {}" and "a pod template is a partial Pod manifest" in message
    screenshot(page, "editor-admin-pod-template-error")
    assert PodTemplate.objects.get(pk=template.pk).body == template.body

    # the admin's dark mode (Unfold's <html class="dark">): the editor follows it
    background = f"() => getComputedStyle(document.querySelector('{editor}')).backgroundColor"
    assert page.evaluate(background) == "rgb(252, 252, 253)"
    page.evaluate("() => document.documentElement.classList.add('dark')")
    page.wait_for_function(f"() => ({background})() === 'rgb(24, 24, 27)'")
    screenshot(page, "editor-admin-pod-template-dark")
    assert failures == []
