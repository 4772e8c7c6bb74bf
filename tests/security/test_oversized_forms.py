"""A self-service form over DATA_UPLOAD_MAX_MEMORY_SIZE gets the page's own error naming the limit (the API's
wording, workflows.api.views.spec_of), a 400 and nothing stored, never Django's bare "Bad Request (400)"
(portal.form_limits). The pages are driven as a browser does, with CSRF checks on: the submit form posts as
multipart/form-data (its `enctype`, and `hx-encoding` for htmx's Preview), the CSRF token first in the form
or, from htmx, in the X-CSRFToken header."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from django.conf import settings
from django.test import Client

from selfservice.models import AccessRequest, PoolRequest
from workflows.models import Task, Workflow

# Larger than DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MiB) even as multipart, where the spec is not escaped
SPEC = "version: 2\nworkflow:\n  name: huge\n" + "# " + "x" * 2_700_000 + "\n"
REASON = (
    f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes; "
    f"a spec may have at most {settings.WORKFLOW_SPEC_MAX_BYTES} bytes"
)


def browser(user, page: str) -> tuple[Client, str, str]:
    """A client that checks CSRF as production does, and the token the page's form carries."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    html = client.get(page).content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    return client, html, token


def assert_page_error(response, status: int) -> None:
    assert response.status_code == status, response.content[:300]
    html = response.content.decode()
    assert "The spec has a mistake" in html
    assert '<code class="path">spec</code>: ' + REASON in html
    assert re.search(r"\(value: <code>\d+ bytes</code>\)", html)
    assert not Workflow.objects.exists() and not Task.objects.exists()


def test_the_submit_form_posts_multipart_from_htmx_and_without_javascript(pool, alice):
    _, html, _ = browser(alice, "/pools/batch/submit/")
    form = re.search(r'<form method="post"[^>]*id="submit-form"[^>]*>', html).group(0)
    assert 'enctype="multipart/form-data"' in form and 'hx-encoding="multipart/form-data"' in form


@pytest.mark.parametrize("page", ["submit", "submit/preview"])
def test_a_plain_form_submit_over_the_limit_gets_the_pages_error(pool, alice, page):
    """Without JavaScript (or the Submit button): the token is read from the form, before the spec."""
    client, _, token = browser(alice, "/pools/batch/submit/")
    form = {"csrfmiddlewaretoken": token, "spec": SPEC, "priority": "NORMAL", "project": ""}
    response = client.post(f"/pools/batch/{page}/", form)  # multipart, in the form's order
    assert_page_error(response, 400)
    assert 'id="spec-editor"' in response.content.decode()  # the whole page, to try again


def test_htmx_preview_over_the_limit_shows_the_error_in_the_preview(pool, alice):
    """htmx swaps only 2xx answers (templates/portal/base.html): the fragment is a 200, as for every other
    refusal the preview shows."""
    client, _, token = browser(alice, "/pools/batch/submit/")
    form = {"csrfmiddlewaretoken": token, "spec": SPEC, "priority": "NORMAL", "project": ""}
    response = client.post("/pools/batch/submit/preview/", form, headers={"HX-Request": "true", "X-CSRFToken": token})
    assert_page_error(response, 200)
    assert 'id="spec-editor"' not in response.content.decode()  # the fragment only: the editor keeps its text


def test_a_url_encoded_form_over_the_limit_gets_the_pages_error(pool, alice):
    """An older page (or a script) posting URL-encoded: Django would read none of it; the token in the header
    passes the CSRF check."""
    client, _, token = browser(alice, "/pools/batch/submit/")
    body = urlencode({"spec": SPEC, "priority": "NORMAL"})
    response = client.post(
        "/pools/batch/submit/preview/",
        body,
        content_type="application/x-www-form-urlencoded",
        headers={"X-CSRFToken": token},
    )
    assert_page_error(response, 400)


def test_an_oversized_form_without_a_csrf_token_is_still_refused_by_the_csrf_check(pool, alice):
    client, _, token = browser(alice, "/pools/batch/submit/")
    response = client.post("/pools/batch/submit/", {"spec": SPEC, "csrfmiddlewaretoken": token})
    assert response.status_code == 403  # the token came after the field over the limit: never read
    assert not Workflow.objects.exists()


def test_a_form_under_the_limit_with_a_body_over_it_is_read(pool, alice, settings):
    """The limit is on the form's fields (as Django counts them), not on multipart's framing around them."""
    client, _, token = browser(alice, "/pools/batch/submit/")
    form = {"csrfmiddlewaretoken": token, "spec": "version: 2\n", "priority": "NORMAL", "project": ""}
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 200  # the fields count ~130 bytes; the multipart body ~500
    response = client.post("/pools/batch/submit/preview/", form)
    assert response.status_code == 400
    html = response.content.decode()
    assert "The spec has a mistake" in html and "larger than" not in html  # the spec's own mistake


@pytest.mark.parametrize("kind", ["access", "pool"])
def test_a_request_form_over_the_limit_is_refused_on_the_page(pool, bob, kind):
    """bob may not use pool batch yet: the page offers him both forms."""
    client, html, token = browser(bob, "/requests/")
    for form_id in ("access-request-form", "pool-request-form"):  # multipart: the token is read first
        assert re.search(rf'<form method="post"[^>]*id="{form_id}"[^>]*enctype="multipart/form-data"', html)
    field = "justification" if kind == "access" else "purpose"
    form = {"csrfmiddlewaretoken": token, "kind": kind, "pool": "batch", "team": "vision", "hardware": "cpu"}
    response = client.post("/requests/", {**form, "gpus": "8", field: "x" * 2_700_000})
    assert response.status_code == 400
    html = response.content.decode()
    assert f"Not sent: the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes" in html
    assert 'id="access-request-form"' in html and 'id="pool-request-form"' in html
    assert not AccessRequest.objects.exists() and not PoolRequest.objects.exists()
