"""Paging for the admin's change lists of big tables (docs/scale.md): a million workflows in a year.

Django's change list counts its rows twice (the filtered list and the whole table) and reaches page N with
`OFFSET (N - 1) × per page`, fetching every row it skips. `LargeTablePaginator`:

- counts exactly only when the planner expects at most `EXACT_BELOW` rows; above that it takes PostgreSQL's own
  estimate (`EXPLAIN`), so a list of a million rows costs no scan of a million rows to say how many pages it has.
  The list then says "about N" (its own pagination template). A page that comes back short ends the list, so
  the count is then exact: the rows before it plus its own; a page past the real end (the estimate was high)
  counts the rows once, so its page links lead back to the real last page;
- reaches a page deeper than `per page × 10` rows in two steps: the ids of the page first (the list's ordering
  read from an index that holds it, no row fetched), then those rows, in that ordering.

A model admin takes it with `paginator = LargeTablePaginator` and `show_full_result_count = False`.
"""

from __future__ import annotations

import json

from django.core.paginator import Paginator
from django.db import connections
from django.utils.functional import cached_property

EXACT_BELOW = 20_000
DEEP_FROM_PAGE = 10


def estimated_rows(queryset) -> int | None:
    """The planner's estimate of the rows `queryset` returns (PostgreSQL), else None."""
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    sql, params = queryset.order_by().query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    return int(plan[0]["Plan"]["Plan Rows"])


class LargeTablePaginator(Paginator):
    estimated = False
    template_name = "admin/large_table_pagination.html"  # unfold's pagination, with "about" before an estimate

    @cached_property
    def count(self) -> int:
        guess = estimated_rows(self.object_list)
        if guess is None or guess < EXACT_BELOW:
            return self.object_list.count()
        self.estimated = True
        return guess

    def page(self, number):
        number = self.validate_number(number)
        bottom = (number - 1) * self.per_page
        if number <= DEEP_FROM_PAGE:
            found = super().page(number)
        else:
            ids = list(self.object_list.values_list("pk", flat=True)[bottom : bottom + self.per_page])
            found = self._get_page(list(self.object_list.filter(pk__in=ids)), number, self)
        if self.estimated and len(found.object_list) < self.per_page:
            self._settle(bottom + len(found.object_list) if found.object_list else self.object_list.count())
        return found

    def get_elided_page_range(self, number=1, **kwargs):
        """The page links; around the last real page when `number` lay past the end the estimate promised."""
        try:
            number = int(number)
        except (TypeError, ValueError):
            number = 1
        return super().get_elided_page_range(max(1, min(number, self.num_pages)), **kwargs)

    def _settle(self, exact: int) -> None:
        """The list's end was reached: the count is now exact (and the pages derived from it)."""
        self.estimated = False
        self.__dict__["count"] = exact
        for derived in ("num_pages", "page_range"):
            self.__dict__.pop(derived, None)
