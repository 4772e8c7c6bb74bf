"""Page forms over DATA_UPLOAD_MAX_MEMORY_SIZE, refused by the page that takes them (its own error, naming the
limit) instead of Django's bare "Bad Request (400)".

Django refuses such a body when `request.POST` is first read, which is CsrfViewMiddleware's check, before the
view runs. `OversizedFormMiddleware` (before CsrfViewMiddleware) reads the form first for views marked with
`@refuses_oversized_forms`: an oversized form leaves `request.form_too_large` set to its size and `request.POST`
holding only the fields read before the limit (a multipart form's leading `csrfmiddlewaretoken`, so a plain
form submit still passes the CSRF check; htmx also sends the token as a header). The view then answers with
its error and reads nothing else. Other requests are left to Django as they are.

Django offers no hook for this: the fields read so far are the parser's `_post`, and the request's parsed
form is set as Django's own error handling sets it (`_mark_post_parse_error`). If a Django upgrade changes
them, tests/security/test_oversized_forms.py fails (a plain form submit then gets the CSRF 403).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import QueryDict
from django.http.multipartparser import MultiPartParser

MULTIPART = "multipart/form-data"


def refuses_oversized_forms(view):
    """Mark a page view that answers an oversized form itself: it must check `request.form_too_large` before
    acting on the form (the form is empty then)."""
    view.refuses_oversized_forms = True
    return view


def body_too_large() -> str:
    """The API's wording for a body over the limit (workflows.api.views.spec_of)."""
    return f"the request body is larger than {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"


def spec_form_too_large() -> str:
    return f"{body_too_large()}; a spec may have at most {settings.WORKFLOW_SPEC_MAX_BYTES} bytes"


def form_too_large(request) -> int | None:
    """The size of a form the middleware did not read (None: read as usual, or not a marked view)."""
    return getattr(request, "form_too_large", None)


class OversizedFormMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method == "POST" and getattr(view_func, "refuses_oversized_forms", False):
            read_form(request)
        return None


def read_form(request) -> None:
    request.form_too_large = None
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    size = int(request.META.get("CONTENT_LENGTH") or 0)
    if limit is None or size <= limit:
        return  # no field can be over the limit: Django reads the form when asked
    if request.content_type != MULTIPART:  # URL-encoded: Django refuses it whole, without reading it
        request.form_too_large = size
        request._mark_post_parse_error()  # what Django's own handler does: an empty form from now on
        return
    parser = MultiPartParser(request.META, request, request.upload_handlers, request.encoding)
    try:
        post, files = parser.parse()
    except RequestDataTooBig:
        request.form_too_large = size
        post, files = getattr(parser, "_post", None) or QueryDict(), None  # the fields read before the limit
        request._mark_post_parse_error()
    if files is not None:
        request._files = files
    post._mutable = False
    request.POST = post
