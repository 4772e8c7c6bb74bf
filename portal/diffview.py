"""Two texts as rows a page can colour: unified (one column) or side by side (two), with line numbers.

Pure: no Django. The admin's revision page and rollback confirmation render these rows server-side
(templates/admin/_diff.html); unchanged runs longer than the context collapse into one gap row.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

CONTEXT = 3
MODES = ("unified", "split")


@dataclass(frozen=True)
class Row:
    """One row. `kind`: same, del, add, change (split only: old on the left, new on the right), gap."""

    kind: str
    old_no: int | None = None
    old: str = ""
    new_no: int | None = None
    new: str = ""

    @property
    def text(self) -> str:
        """The unified view's line, with its diff sign."""
        if self.kind == "gap":
            return self.old
        return {"del": "-", "add": "+"}.get(self.kind, " ") + (self.new if self.kind == "add" else self.old)


@dataclass(frozen=True)
class DiffView:
    fmt: str  # the format the object is edited in: "yaml" or "json"
    mode: str  # "unified" or "split"
    rows: list[Row]

    @property
    def empty(self) -> bool:
        return not self.rows

    @property
    def added(self) -> int:
        return sum(r.kind in ("add", "change") and r.new_no is not None for r in self.rows)

    @property
    def removed(self) -> int:
        return sum(r.kind in ("del", "change") and r.old_no is not None for r in self.rows)


def diff_view(old_text: str, new_text: str, fmt: str, mode: str = "unified") -> DiffView:
    mode = mode if mode in MODES else "unified"
    old, new = old_text.splitlines(), new_text.splitlines()
    rows = split_rows(old, new) if mode == "split" else unified_rows(old, new)
    return DiffView(fmt, mode, rows)


def unified_rows(old: list[str], new: list[str], context: int = CONTEXT) -> list[Row]:
    def changed(i1: int, i2: int, j1: int, j2: int) -> list[Row]:
        return [Row("del", i + 1, old[i]) for i in range(i1, i2)] + [
            Row("add", new_no=j + 1, new=new[j]) for j in range(j1, j2)
        ]

    return _rows(old, new, context, changed)


def split_rows(old: list[str], new: list[str], context: int = CONTEXT) -> list[Row]:
    """Replaced lines face each other; a longer side runs on beside empty cells."""

    def changed(i1: int, i2: int, j1: int, j2: int) -> list[Row]:
        rows = []
        for offset in range(max(i2 - i1, j2 - j1)):
            i, j = i1 + offset, j1 + offset
            left = (i + 1, old[i]) if i < i2 else (None, "")
            right = (j + 1, new[j]) if j < j2 else (None, "")
            kind = "change" if left[0] and right[0] else ("del" if left[0] else "add")
            rows.append(Row(kind, left[0], left[1], right[0], right[1]))
        return rows

    return _rows(old, new, context, changed)


def _rows(old: list[str], new: list[str], context: int, changed) -> list[Row]:
    """Every hunk's rows: unchanged lines as they are, the changed ones as `changed(i1, i2, j1, j2)` lays them."""
    rows: list[Row] = []
    for group in _groups(old, new, context, rows):
        for tag, i1, i2, j1, j2 in group:
            rows += _same(old, new, i1, i2, j1) if tag == "equal" else changed(i1, i2, j1, j2)
    return rows


def _same(old: list[str], new: list[str], i1: int, i2: int, j1: int) -> list[Row]:
    return [Row("same", i + 1, old[i], j1 + i - i1 + 1, new[j1 + i - i1]) for i in range(i1, i2)]


def _groups(old: list[str], new: list[str], context: int, rows: list[Row]):
    """The changed hunks; between two, and before the first, a gap row says how much is hidden."""
    shown_old = 0
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(context):
        hidden = group[0][1] - shown_old
        if hidden > 0:
            rows.append(_gap(hidden))
        yield group
        shown_old = group[-1][2]
    if rows and shown_old < len(old):
        rows.append(_gap(len(old) - shown_old))


def _gap(hidden: int) -> Row:
    return Row("gap", old=f"⋯ {hidden} unchanged line{'s' if hidden != 1 else ''}")
