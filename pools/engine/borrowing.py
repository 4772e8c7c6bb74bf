"""Who is borrowing from whom in one node pool, for one resource: the admin's fair-share page reads this.

Units as in pools.engine.quota_model. Per project (from a pass result, allocation once the pass applies):
* `borrowed = max(0, allocated − deserved)` — what it uses above its guarantee;
* `lent` — the part of its unused guarantee (`max(0, deserved − allocated)`) that borrowers are using;
* `idle` — the rest of its unused guarantee: nobody uses it.
Attribution (a convention: the scheduler does not tie a borrowed GPU to an owner): borrowing is first
covered by capacity nobody is guaranteed (`capacity − Σ project deserved`), then by the idle guarantees of
projects in proportion to their idle amounts (those that lend first; a never-lending project's only for what
the others cannot cover). Each borrower draws on each source in proportion to what it
borrowed; the loans are exact ints (pools.engine.fairshare.water_fill) and add up per borrower and lender.
"""

from __future__ import annotations

from dataclasses import dataclass

from pools.engine.fairshare import water_fill
from pools.engine.quota_pass import PassResult


@dataclass(frozen=True, slots=True)
class BorrowRow:
    project: str
    department: str
    deserved: int
    fair_share: int
    allocated: int
    borrowed: int
    lent: int
    idle: int


@dataclass(frozen=True, slots=True)
class Loan:
    """`borrower` uses `amount` of `lender`'s idle guarantee; lender None = capacity nobody is guaranteed."""

    borrower: str
    lender: str | None
    amount: int


@dataclass(frozen=True)
class BorrowingView:
    node_pool: str
    resource: str
    capacity: int
    rows: tuple[BorrowRow, ...]
    loans: tuple[Loan, ...]

    def row(self, project: str) -> BorrowRow:
        return next(r for r in self.rows if r.project == project)


def borrowing_view(result: PassResult, resource: str = "gpu", *, after: bool = True) -> BorrowingView:
    """Per project and the loans between them; `after=False` reads the allocation before the pass."""
    allocated = result.allocated_after if after else result.allocated_before
    shares = result.shares[resource].projects
    projects = sorted(result.tree.projects, key=lambda p: p.name)
    deserved = [p.quota(resource).deserved for p in projects]
    used = [allocated[p.name].get(resource) if p.name in allocated else 0 for p in projects]
    borrowed = [max(0, u - d) for u, d in zip(used, deserved, strict=True)]
    idle = [max(0, d - u) for u, d in zip(used, deserved, strict=True)]
    capacity = result.capacity.get(resource)
    total = sum(borrowed)
    from_nobody = min(total, max(0, capacity - sum(deserved)))
    names = [p.name for p in projects]
    lent = _lent(total - from_nobody, idle, [p.quota(resource).lend for p in projects], names)
    sources = [(None, from_nobody), *((names[i], lent[i]) for i in range(len(projects)) if lent[i])]
    remaining = list(borrowed)
    loans = []
    for lender, amount in sources:
        given = water_fill(amount, remaining, borrowed, names)
        for i, part in enumerate(given):
            if part:
                loans.append(Loan(names[i], lender, part))
                remaining[i] -= part
    rows = tuple(
        BorrowRow(
            p.name,
            p.department or "",
            deserved[i],
            shares[p.name].fair_share if p.name in shares else 0,
            used[i],
            borrowed[i],
            lent[i],
            idle[i] - lent[i],
        )
        for i, p in enumerate(projects)
    )
    loans.sort(key=lambda loan: (loan.borrower, loan.lender or ""))
    return BorrowingView(result.node_pool, resource, capacity, rows, tuple(loans))


def _lent(amount: int, idle: list[int], lends: list[bool], names: list[str]) -> list[int]:
    """`amount` over the idle guarantees: those that may be lent first, a never-lending team's only for what
    they cannot cover (borrowed before the switch was set)."""
    lendable = [i if lend else 0 for i, lend in zip(idle, lends, strict=True)]
    first = water_fill(amount, lendable, lendable, names)
    kept = [i - f for i, f in zip(idle, first, strict=True)]
    second = water_fill(amount - sum(first), kept, kept, names)
    return [f + s for f, s in zip(first, second, strict=True)]
