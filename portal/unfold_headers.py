"""unfold's change lists build their column headers once per row, not once per page.

`unfold.templatetags.unfold_list.items_for_result` calls `result_headers(cl)` for every row, to label each
cell for the phone layout; each call renders the "select all" checkbox through its widget template and
builds three query strings per sortable column. A 100-row page paid that 101 times: about half of the pool
list's render. The headers depend only on the change list, which is one per request, so they are built on
the first call and the same list is handed out after; unfold only reads them.
"""

from __future__ import annotations

from unfold.templatetags import unfold_list

_BUILT = "_pool_portal_result_headers"


def install() -> None:
    """Idempotent. Fails loudly if unfold no longer has the function this wraps (an upgrade to review)."""
    original = unfold_list.result_headers
    if getattr(original, "wraps_unfold", False):
        return

    def result_headers(cl):
        headers = getattr(cl, _BUILT, None)
        if headers is None:
            headers = list(original(cl))
            setattr(cl, _BUILT, headers)
        return iter(headers)

    result_headers.wraps_unfold = True
    unfold_list.result_headers = result_headers
