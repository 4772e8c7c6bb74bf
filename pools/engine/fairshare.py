"""Fair share per node pool and resource, hierarchical department → project, after KAI-Scheduler's
proportion plugin (quota-reference.md §1.2) but in exact integers.

Units: amounts are ints — gpu count, cpu millicores, memory bytes (pools.engine.quota_model). Every share
is an int; no floats anywhere, so the same inputs always give the same answer on every machine.

One level (`divide`) gives a set of sibling queues a `total`:
1. Requestable: `r_i = min(request_i, limit_i)` (limit None = no cap). `request` is what the queue holds
   plus what it has queued.
2. Deserved pass: each queue gets `g_i = min(deserved_i, r_i)`. If the total cannot cover Σ g_i (capacity
   below the guarantees, e.g. nodes down), the portal's rule (`SHRINK`, the default) water-fills the total
   over the queues with weight `deserved_i` instead, capped at `g_i`: guarantees shrink in proportion to
   their size. KAI-Scheduler's rule (`KAI`, resource_division.go setDeservedResource) keeps every `g_i` whole
   — the shares then add up to more than the total — and leaves no surplus: what a KAI-delegated backend
   will do (docs/admission.md, "Over-subscription").
3. Over-quota pass (only when over-quota is on): the rest `R = total - Σ g_i` goes to the priority levels
   from highest to lowest; inside a level it is water-filled by over-quota weight, each queue capped at
   `r_i - g_i`. A queue with weight 0 gets no surplus. What one level leaves goes to the next.

Water-filling (`water_fill`), exact: queues whose cap is at most their weighted slice `R·w_i / W` of what is
left are satisfied (sorted by cap/weight, the smallest first; each one leaves more for the rest); the others
get `floor(R·w_i / W)`, and the units the floors leave (fewer than the number of queues) go one each to the
largest fractions, ties by larger weight, then the older queue (`created`, as KAI breaks them), then by name
(`KAI`: older, then name, no weight). A unit never takes a queue above its cap.

Never lend (`Quota.lend` False): before step 3, a never-lending queue holds the unused part of its deserved
(`deserved - g_i`; `Share.held`, shrunk like the guarantees when the room left is short), and the surplus is
what is left after the holds: nobody's fair share ever includes it. A department holds its own unused
deserved when it never lends, else what its never-lending projects hold, and passes its fair share plus that
hold down to its projects, so the hold stays with the project it is for.

Hierarchy (`fair_share`): departments first, over the node pool's capacity, each department's request being
the sum of its projects' requestable amounts; then each department's fair share is the total that its
projects divide (priority and weight of the projects). Over-quota off: every share is its deserved part
(`min(deserved, requestable)`, shrunk as in 2 if needed).

Time-based fair share (KAI-Scheduler's, quota-reference.md §1.2; on when a `UsageHistory` is given): only the
over-quota pass changes, never the deserved pass or the holds. Inside a priority level, in each round of the
water-filling, a queue's weight becomes `max(0, wn + k·(wn − u))`: `wn` its weight over the sum of the weights
of the level's queues that still want more (not yet satisfied), `u` its past usage normalised to the node
pool's capacity over the window (`UsageHistory`). Queues whose cap fits in their slice are satisfied, the
weights are worked out again among the others, and so on; the last round splits by floors and leftover units
as above. Exact: `u` is in parts per million and k in thousandths, so the weight of round r is the integer
`(1000 + K)·w·10^6 − K·U·W` (W the round's weight sum), the formula times `W·10^6·1000`. If every weight of a
round comes out 0 (the queues used more than the capacity could give: capacity shrank), the round splits by the
plain weights, so idle capacity still goes to someone who asks. With every `u` = 0 the weights are the plain
ones scaled, so the split is the plain split. A team's weight never grows with its usage; its share, with three
teams or more, now and then can (a sibling satisfied in one round raises everyone's `wn` in the next, and a team
that weighed 0 may then take more), as in KAI's rounds. Usage is the same kind at both levels, as KAI has it:
a project's own, normalised to the node pool's capacity; a department's, the sum of its projects'. So within a
department a project's usage weighs in proportion to the whole node pool, not to the department's share.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cmp_to_key, lru_cache

from pools.engine.quota_model import (
    K_SCALE,
    RESOURCES,
    USAGE_SCALE,
    QuotaTree,
    Resources,
    TeamQuota,
    UsageHistory,
    derived,
)

SHRINK, KAI = "shrink", "kai"  # capacity below the guarantees: shrink them in proportion, or keep them (KAI)
GUARANTEE_RULES = (SHRINK, KAI)


@dataclass(frozen=True, slots=True)
class ShareInput:
    """One queue of one level, for one resource. `priority`: higher is served first over quota."""

    name: str
    deserved: int = 0
    limit: int | None = None
    weight: int = 1
    priority: int = 0
    request: int = 0
    unlent: int = 0  # of its deserved, what it keeps idle for itself when unused (never lent); see divide
    created: float = 0.0  # older (smaller) wins a tie for a leftover unit
    usage: int = 0  # past usage, parts per million of the node pool's capacity over the window (time-based)

    @property
    def requestable(self) -> int:
        return self.request if self.limit is None else min(self.request, self.limit)


@dataclass(frozen=True, slots=True)
class Share:
    """A queue's fair share = `deserved_part` (guaranteed, ≤ deserved) + `over_quota_part` (surplus)."""

    name: str
    deserved_part: int
    over_quota_part: int
    requestable: int
    held: int = 0  # unused deserved kept idle for a never-lending queue: in nobody's fair share

    @property
    def fair_share(self) -> int:
        return self.deserved_part + self.over_quota_part


@dataclass(frozen=True)
class FairShare:
    """One resource of one node pool: every department's and project's share; `unassigned` is what nobody
    asked for (capacity − Σ department shares, never below 0: under KAI's rule the shares of an over-committed
    node pool add up to more than its capacity, and KAI then reports nothing left, not a debt)."""

    resource: str
    capacity: int
    over_quota: bool
    departments: Mapping[str, Share]
    projects: Mapping[str, Share]
    deserved_total: int = 0  # Σ department deserved: above `capacity` the node pool is over-committed
    rule: str = SHRINK

    @property
    def unassigned(self) -> int:
        return max(0, self.capacity - sum(s.fair_share for s in self.departments.values()))

    @property
    def over_committed(self) -> bool:
        """The departments are guaranteed more than the node pool holds (flag it to the admin)."""
        return self.deserved_total > self.capacity


def water_fill(
    amount: int, caps: Sequence[int], weights: Sequence[int], names: Sequence[str], ties: Sequence | None = None
) -> list[int]:
    """Split `amount` over queues by `weights`, nobody above its cap; exact ints (see the module docstring).

    Returns one int per queue; queues with weight 0 or cap 0 get 0. Σ result ≤ amount, = amount unless
    every weighted queue reached its cap. `ties`: per queue, the key that orders equal fractions for the
    leftover units (default: larger weight, then name)."""
    given = [0] * len(caps)
    live = [i for i in range(len(caps)) if caps[i] > 0 and weights[i] > 0]
    if amount <= 0 or not live:
        return given
    if sum(caps[i] for i in live) <= amount:
        for i in live:
            given[i] = caps[i]
        return given
    if len({weights[i] for i in live}) == 1:  # one weight (the usual case): by cap, no fractions to build
        live.sort(key=lambda i: (caps[i], names[i]))
    else:  # smallest cap per weight first, compared exactly in integers
        live.sort(
            key=cmp_to_key(lambda a, b: caps[a] * weights[b] - caps[b] * weights[a] or _order(names[a], names[b]))
        )
    left, weight_left = amount, sum(weights[i] for i in live)
    start = 0
    # caps[i] / w_i <= left / weight_left, in integers
    while start < len(live) and caps[live[start]] * weight_left <= left * weights[live[start]]:
        i = live[start]
        given[i] = caps[i]
        left -= caps[i]
        weight_left -= weights[i]
        start += 1
    rest = live[start:]
    fractions = []
    for i in rest:
        whole, fraction = divmod(left * weights[i], weight_left)
        given[i] = whole
        fractions.append((-fraction, ties[i] if ties else (-weights[i], names[i]), i))
    spare = left - sum(given[i] for i in rest)
    fractions.sort()
    for _, _, i in fractions[:spare]:
        given[i] += 1
    return given


def _order(a: str, b: str) -> int:
    return (a > b) - (a < b)


def usage_weight(weight: int, weight_sum: int, usage: int, k_milli: int) -> int:
    """`max(0, wn + k·(wn − u))` times `weight_sum · USAGE_SCALE · K_SCALE`, exact (`wn = weight / weight_sum`,
    `u = usage / USAGE_SCALE`, `k = k_milli / K_SCALE`)."""
    return max(0, (K_SCALE + k_milli) * weight * USAGE_SCALE - k_milli * usage * weight_sum)


def water_fill_by_usage(
    amount: int,
    caps: Sequence[int],
    weights: Sequence[int],
    usages: Sequence[int],
    k_milli: int,
    names: Sequence[str],
    ties: Sequence,
) -> list[int]:
    """`water_fill` with time-based weights (module docstring): each round, the weights are worked out again
    among the queues still unsatisfied; the queues whose cap fits in their slice take it, until none does,
    and the rest is split by `water_fill` with that round's weights."""
    given = [0] * len(caps)
    live = [i for i in range(len(caps)) if caps[i] > 0 and weights[i] > 0]
    left = amount
    while live and left > 0:
        if sum(caps[i] for i in live) <= left:
            for i in live:
                given[i] = caps[i]
            break
        weight_sum = sum(weights[i] for i in live)
        adjusted = {i: usage_weight(weights[i], weight_sum, usages[i], k_milli) for i in live}
        if not any(adjusted.values()):  # all used more than there was: plain weights, so nothing idles
            adjusted = {i: weights[i] for i in live}
        total = sum(adjusted.values())
        full = [i for i in live if adjusted[i] and caps[i] * total <= left * adjusted[i]]
        if not full:
            split = water_fill(
                left,
                [caps[i] for i in live],
                [adjusted[i] for i in live],
                [names[i] for i in live],
                [ties[i] for i in live],
            )
            for i, amount_given in zip(live, split, strict=True):
                given[i] = amount_given
            break
        for i in full:
            given[i] = caps[i]
            left -= caps[i]
        satisfied = set(full)
        live = [i for i in live if i not in satisfied]
    return given


def usage_weights(weights: Mapping[str, int], usage: Mapping[str, int], k_milli: int) -> dict[str, tuple]:
    """For the pages: per sibling with a weight above 0, `(wn, weight after usage)` as exact fractions, the
    first round's when all of `weights` want more than their deserved (later rounds drop satisfied queues)."""
    weight_sum = sum(w for w in weights.values() if w > 0)
    scale = weight_sum * USAGE_SCALE * K_SCALE
    return {
        name: (Fraction(w, weight_sum), Fraction(usage_weight(w, weight_sum, usage.get(name, 0), k_milli), scale))
        for name, w in weights.items()
        if w > 0
    }


def divide(
    total: int,
    queues: Sequence[ShareInput],
    *,
    over_quota: bool = True,
    rule: str = SHRINK,
    k_milli: int | None = None,
) -> dict[str, Share]:
    """Give `total` to sibling `queues` (one level; steps 1–3 of the module docstring). Keyed by name.
    `k_milli` set: the over-quota pass weighs the queues' `usage` (time-based fair share); None: it does not.
    Queues that ask for nothing and hold nothing get nothing at once: a node pool's hundreds of idle teams cost
    no sorting. A never-lending queue takes part even when it asks for nothing: it holds its unused deserved."""
    result: dict[str, Share] = {}
    busy, asks = [], []
    for q in queues:
        requestable = q.requestable
        if requestable > 0 or q.unlent > 0:
            busy.append(q)
            asks.append(requestable)
        else:
            result[q.name] = _nothing(q.name)
    if not busy:
        return result
    wants = [min(q.deserved, ask) for q, ask in zip(busy, asks, strict=True)]
    holds = [max(0, min(q.unlent, q.deserved - want)) for q, want in zip(busy, wants, strict=True)]
    served = [ask if over_quota and q.weight > 0 else want for q, ask, want in zip(busy, asks, wants, strict=True)]
    if len(busy) == 1:  # alone at its level (a department's one busy project): nothing to divide
        q, ask, hold = busy[0], asks[0], holds[0]
        guaranteed = min(q.deserved, ask) if rule == KAI else min(q.deserved, ask, total)
        held = min(hold, max(0, total - guaranteed))
        surplus = min(ask - guaranteed, max(0, total - guaranteed - held)) if over_quota and q.weight > 0 else 0
        result[q.name] = Share(q.name, guaranteed, surplus, ask, held)
        return result
    if sum(served) + sum(holds) <= total:  # room for everything asked and held (a department's share)
        for q, ask, want, serve, hold in zip(busy, asks, wants, served, holds, strict=True):
            result[q.name] = Share(q.name, want, serve - want, ask, hold)
        return result
    names = [q.name for q in busy]
    ties = [(q.created, q.name) if rule == KAI else (-q.weight, q.created, q.name) for q in busy]
    # capacity below the guarantees: they shrink in proportion to deserved (SHRINK) or stay whole (KAI)
    short = sum(wants) > total and rule == SHRINK
    guaranteed = water_fill(total, wants, [q.deserved for q in busy], names, ties) if short else wants
    surplus = [0] * len(busy)
    unlent = [max(0, min(q.unlent, q.deserved - guaranteed[i])) for i, q in enumerate(busy)]
    held = water_fill(max(0, total - sum(guaranteed)), unlent, [q.deserved for q in busy], names, ties)
    left = total - sum(guaranteed) - sum(held)
    if over_quota and left > 0:
        for level in sorted({q.priority for q in busy}, reverse=True):
            members = [i for i, q in enumerate(busy) if q.priority == level]
            caps = [asks[i] - guaranteed[i] for i in members]
            weights = [busy[i].weight for i in members]
            if k_milli is None:
                given = water_fill(left, caps, weights, [names[i] for i in members], [ties[i] for i in members])
            else:
                usages = [busy[i].usage for i in members]
                given = water_fill_by_usage(
                    left, caps, weights, usages, k_milli, [names[i] for i in members], [ties[i] for i in members]
                )
            for i, amount in zip(members, given, strict=True):
                surplus[i] = amount
            left -= sum(given)
            if left <= 0:
                break
    for i, q in enumerate(busy):
        result[q.name] = Share(q.name, guaranteed[i], surplus[i], asks[i], held[i])
    return result


@lru_cache(maxsize=65536)
def _nothing(name: str) -> Share:
    """The share of a team that asks for nothing (immutable, so one per name serves every pass)."""
    return Share(name, 0, 0, 0)


def _share_input(team: TeamQuota, resource: str, request: int, unlent: int = 0, usage: int = 0) -> ShareInput:
    quota = team.quota(resource)
    unlent = unlent if quota.lend else quota.deserved
    return ShareInput(
        team.name,
        quota.deserved,
        quota.limit,
        quota.weight,
        team.priority,
        request,
        unlent=unlent,
        created=team.created,
        usage=usage,
    )


def _unused_unlent(share_input: ShareInput) -> int:
    return max(0, min(share_input.unlent, share_input.deserved - share_input.requestable))


def fair_share(
    capacity: int,
    tree: QuotaTree,
    resource: str,
    requests: Mapping[str, int],
    *,
    over_quota: bool = True,
    rule: str = SHRINK,
    index: _TreeIndex | None = None,
    usage: Mapping[str, int] | None = None,
    k_milli: int = K_SCALE,
) -> FairShare:
    """Fair share of one resource in one node pool. `requests`: project name → allocated + queued demand
    (missing = 0). Departments first, then each department's share over its projects. `rule`: SHRINK (the
    portal's admission) or KAI (what a KAI-delegated backend will do) when capacity is below the guarantees.
    `usage` (project → parts per million, see UsageHistory) turns on the time-based fair share with `k_milli`;
    None: off, the plain split. Only the projects that ask for something are divided; the others share nothing,
    at the cost of a copy."""
    index = index or _TreeIndex(tree)
    if usage is None:  # kept per tree for the same asks (what nobody asks for changes nothing): see _TreeIndex
        key = (capacity, resource, over_quota, rule, frozenset(item for item in requests.items() if item[1] > 0))
        found = index.shares.get(key)
        if found is None:
            if len(index.shares) >= _DIVIDED_MAX:
                index.shares.clear()
            found = index.shares[key] = _fair_share(capacity, tree, resource, requests, over_quota, rule, index)
        return found
    return _fair_share(capacity, tree, resource, requests, over_quota, rule, index, usage, k_milli)


def _fair_share(
    capacity: int,
    tree: QuotaTree,
    resource: str,
    requests: Mapping[str, int],
    over_quota: bool,
    rule: str,
    index: _TreeIndex,
    usage: Mapping[str, int] | None = None,
    k_milli: int = K_SCALE,
) -> FairShare:
    projects = dict(index.nothing)
    if resource in index.idle and not any(request > 0 for request in requests.values()):
        # nobody asks for it and nobody holds it unlent: every share is nothing (what `divide` would give)
        departments = {d.name: _nothing(d.name) for d in tree.departments}
        return FairShare(resource, capacity, over_quota, departments, projects, index.deserved[resource], rule)
    used = usage or {}
    by_department: dict[str, list[ShareInput]] = {}
    for name, request in requests.items():
        project = index.projects.get(name)
        if project is not None and request > 0:
            inputs = by_department.setdefault(project.department, [])
            inputs.append(_share_input(project, resource, request, usage=used.get(name, 0)))
    for project in index.holders.get(resource, ()):
        if requests.get(project.name, 0) <= 0:  # idle, never lends: holds its deserved
            by_department.setdefault(project.department, []).append(_share_input(project, resource, 0))
    department_used = department_usage(tree, used) if used else {}
    department_inputs = [
        _share_input(
            d,
            resource,
            sum(p.requestable for p in by_department.get(d.name, ())),
            sum(_unused_unlent(p) for p in by_department.get(d.name, ())),
            usage=department_used.get(d.name, 0),
        )
        for d in tree.departments
    ]
    k = None if usage is None else k_milli
    split = index.divide if usage is None else divide  # past usage moves with time: not kept
    options = {"over_quota": over_quota, "rule": rule, "k_milli": k}
    departments = dict(split(max(0, capacity), department_inputs, **options))
    for department, inputs in by_department.items():
        share = departments[department]
        projects.update(split(share.fair_share + share.held, inputs, **options))
    deserved_total = sum(d.deserved for d in department_inputs)
    return FairShare(resource, capacity, over_quota, departments, projects, deserved_total, rule)


def department_usage(tree: QuotaTree, usage: Mapping[str, int]) -> dict[str, int]:
    """A department's usage is the sum of its projects' (each normalised to the node pool's capacity)."""
    found: dict[str, int] = {}
    for project in tree.projects:
        if usage.get(project.name):
            found[project.department] = found.get(project.department, 0) + usage[project.name]
    return found


class _TreeIndex:
    """A quota tree's projects by name, their shares when nobody asks, and per resource the projects that never
    lend (they take part even when idle: they hold their deserved), built once for all resources."""

    def __init__(self, tree: QuotaTree) -> None:
        self.projects = {p.name: p for p in tree.projects}
        self.nothing = {p.name: _nothing(p.name) for p in tree.projects}
        self.holders = {
            resource: [p for p in tree.projects if not p.quota(resource).lend and p.quota(resource).deserved > 0]
            for resource in RESOURCES
        }
        self.deserved = {resource: sum(d.quota(resource).deserved for d in tree.departments) for resource in RESOURCES}
        # the resources no team holds when it asks for nothing (no never-lending deserved)
        self.idle = {
            resource
            for resource in RESOURCES
            if not self.holders[resource]
            and not any(not d.quota(resource).lend and d.quota(resource).deserved > 0 for d in tree.departments)
        }
        self._divided: dict[tuple, dict[str, Share]] = {}
        # whole fair shares without past usage, by capacity, resource, options and what each project asks (> 0):
        # a replay's passes ask the same again and again. Shared: read them, never change them
        self.shares: dict[tuple, FairShare] = {}

    def divide(self, total: int, queues: list[ShareInput], **options) -> dict[str, Share]:
        """`divide`, kept per tree for the same total, queues and options: a replay's passes mostly change one
        project's request, so the other departments' divisions are found again. Whatever the queues' order:
        `divide` does not depend on it (names, unique among siblings, break every tie). Bounded: past
        `_DIVIDED_MAX` divisions it starts again. The dicts it gives are shared: read them, never change them."""
        key = (total, frozenset(queues), *options.values())
        found = self._divided.get(key)
        if found is None:
            if len(self._divided) >= _DIVIDED_MAX:
                self._divided.clear()
            found = self._divided[key] = divide(total, queues, **options)
        return found


_DIVIDED_MAX = 20_000


def fair_share_index(tree: QuotaTree) -> _TreeIndex:
    """The tree's index that `fair_share` reads, derived once per tree."""
    return derived(tree, "fair_share", _TreeIndex)


def fair_shares(
    capacity: Resources,
    tree: QuotaTree,
    requests: Mapping[str, Resources],
    *,
    over_quota: bool = True,
    rule: str = SHRINK,
    history: UsageHistory | None = None,
) -> dict[str, FairShare]:
    """`fair_share` for every resource (gpu, cpu, memory), each divided independently as KAI does; with a
    `history`, each by its own usage (time-based fair share)."""
    index = derived(tree, "fair_share", _TreeIndex)
    return {
        resource: fair_share(
            capacity.get(resource),
            tree,
            resource,
            {name: amount.get(resource) for name, amount in requests.items()},
            over_quota=over_quota,
            rule=rule,
            index=index,
            usage=None if history is None else history.of(resource),
            k_milli=K_SCALE if history is None else history.k_milli,
        )
        for resource in RESOURCES
    }


class LazyFairShares(Mapping[str, FairShare]):
    """`fair_shares`, each resource divided only when first read: a pass that admits guaranteed work into free
    room reads no fair share at all (the what-if replay runs ~100,000 such passes). Resources are divided
    independently, so the shares read are the ones `fair_shares` gives."""

    def __init__(
        self,
        capacity: Resources,
        tree: QuotaTree,
        requests: Mapping[str, Resources],
        *,
        over_quota: bool = True,
        rule: str = SHRINK,
        history: UsageHistory | None = None,
    ) -> None:
        self._given = (capacity, tree, requests, over_quota, rule, history)
        self._found: dict[str, FairShare] = {}

    def __getitem__(self, resource: str) -> FairShare:
        found = self._found.get(resource)
        if found is None:
            if resource not in RESOURCES:
                raise KeyError(resource)
            capacity, tree, requests, over_quota, rule, history = self._given
            found = self._found[resource] = fair_share(
                capacity.get(resource),
                tree,
                resource,
                {name: amount.get(resource) for name, amount in requests.items()},
                over_quota=over_quota,
                rule=rule,
                index=derived(tree, "fair_share", _TreeIndex),
                usage=None if history is None else history.of(resource),
                k_milli=K_SCALE if history is None else history.k_milli,
            )
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(RESOURCES)

    def __len__(self) -> int:
        return len(RESOURCES)
