"""Keep a backend's machine pools at its provider as the portal defines them (docs/machine-pool-providers.md).

One pass over a backend (`reconcile_backend`): the desired pools (its `MachinePool` rows) against what the
provider holds (`Provider.observe`):

* a row the provider lacks is created; one the provider holds differently is updated. When the row changed
  since the provider last answered, that is the portal's update; otherwise the provider drifted (someone
  edited it there): the row shows `drifted` with what differed, then the pass puts it back and says so;
* a pool the portal made (marked managed-by pool-portal) with no row any more is deleted at the provider, so a
  row deleted while the provider was down goes at the next pass. Pools the portal did not make are never
  touched (ROSA's default `worker` pool, NodePools of someone else); a row whose name one of them holds fails;
* a transient failure (network, timeouts, 5xx) leaves the pool `retrying` with `attempts` counted, and the
  outcome asks to be run again (the Celery task backs off); nothing is lost, since the rows are the truth;
* a refusal (4xx) leaves the pool `failed` with the provider's reason, and it is not sent again until its
  definition changes;
* a backend with no provider: its pools are `export-only`.

The status fields are what the provider last answered: `nodes_now` (the provider's count, else the
inventory's), `nodes_ready` (ready, schedulable nodes of the pool in the inventory), `last_answer`,
`last_answer_at`. Provider calls run outside any transaction; the statuses of a pass are written together in
one transaction at its end (a `drifted` status at once, before the correction is tried).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone

from clusters.machinepools.node_labels import provisioned
from clusters.machinepools.providers import Observed, Provider, ProviderError, differences, provider_for
from clusters.machinepools.spec import MACHINEPOOL_LABEL
from clusters.models import Backend, MachinePool, Node
from portal.oncommit import once_after_commit

log = logging.getLogger(__name__)
State = MachinePool.State
EXPORT_ONLY_ANSWER = "no machine provider on this backend: export only"
_deferred: contextvars.ContextVar[bool] = contextvars.ContextVar("machine_pool_passes_deferred", default=False)


@dataclass
class Outcome:
    backend_id: int
    provider: str = ""
    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    corrected: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    retrying: list[str] = field(default_factory=list)
    in_step: list[str] = field(default_factory=list)
    error: str = ""
    statuses: dict[int, dict] = field(default_factory=dict, repr=False)  # row id -> status to write

    @property
    def retry(self) -> bool:
        """Something failed transiently: run the pass again later."""
        return bool(self.retrying)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if (v or k == "backend_id") and k != "statuses"}


def reconcile_backend(backend_id: int) -> Outcome:
    """One pass over the backend's machine pools; raises Backend.DoesNotExist."""
    backend = Backend.objects.get(pk=backend_id)
    outcome = Outcome(backend_id)
    rows = list(MachinePool.objects.filter(backend=backend))
    try:
        provider = provider_for(backend)
    except ProviderError as error:  # a missing setting: nothing can be sent until it is set
        _record_all(rows, error, outcome)
        _flush(outcome)
        return outcome
    if provider is None:
        MachinePool.objects.filter(backend=backend).exclude(state=State.EXPORT_ONLY).update(
            state=State.EXPORT_ONLY, last_answer=EXPORT_ONLY_ANSWER, last_answer_at=timezone.now(), attempts=0
        )
        return outcome
    outcome.provider = provider.name
    try:
        _pass(provider, backend, rows, outcome)
    finally:
        provider.close()
        _flush(outcome)
    return outcome


def _pass(provider: Provider, backend: Backend, rows: list[MachinePool], outcome: Outcome) -> None:
    try:
        held = provider.observe()
    except ProviderError as error:
        _record_all(rows, error, outcome)
        return
    nodes = _inventory_counts(backend)
    labels: dict = {}  # the node labels added to every row's spec, asked once for the pass (node_labels)
    drifts = _drifts(provider, rows, held, backend.updated_at, labels)
    for row in rows:
        _reconcile_one(
            provider, row, held.pop(row.name, None), nodes, outcome, drifts.get(row.name), backend.updated_at, labels
        )
    for name, current in sorted(held.items()):
        if current.managed:  # the portal made it and its row is gone
            try:
                provider.delete(current)
                outcome.deleted.append(name)
            except ProviderError as error:
                (outcome.retrying if error.transient else outcome.failed).append(name)
                outcome.error = str(error)
                log.warning("machine pool %s: not deleted at %s: %s", name, provider.name, error)


def _edited(row: MachinePool) -> bool:
    """The definition changed since the provider last answered about it."""
    return row.last_answer_at is None or row.updated_at > row.last_answer_at


def _refused_as_is(row: MachinePool, settings_at) -> bool:
    """Refused, and neither the pool nor its backend's settings changed since: not sent again."""
    return row.state == State.FAILED and not _edited(row) and settings_at <= row.last_answer_at


def _drifts(
    provider: Provider, rows: list[MachinePool], held: dict[str, Observed], settings_at, labels: dict
) -> dict[str, list]:
    """Pools the provider holds otherwise than the portal left them: shown `drifted` at once (one transaction),
    before the pass corrects them. A difference is the portal's own edit when the row changed since the
    provider's last answer, or since the last pass that got through (a failed pass answered too)."""
    drifts = {}
    for row in rows:
        current = held.get(row.name)
        if current is None or not current.managed or _refused_as_is(row, settings_at):
            continue
        if _edited(row) or (row.attempts > 0 and not row.last_answer.startswith("drifted")):
            continue
        if diff := differences(provisioned(row.spec(), row.backend_id, labels), current.spec, provider.fields):
            drifts[row.name] = diff
    with transaction.atomic():
        for row in rows:
            if row.name in drifts:
                _write(row, state=State.DRIFTED, last_answer="drifted: " + "; ".join(drifts[row.name]))
    return drifts


def _reconcile_one(
    provider: Provider,
    row: MachinePool,
    current: Observed | None,
    nodes: dict,
    outcome: Outcome,
    drift: list[str] | None,
    settings_at,
    labels: dict,
) -> None:
    if _refused_as_is(row, settings_at):
        outcome.failed.append(row.name)
        return
    desired = provisioned(row.spec(), row.backend_id, labels)
    try:
        if current is None:
            current, answer = provider.create(desired), f"created at {provider.name}"
            outcome.created.append(row.name)
        elif not current.managed:
            raise ProviderError(
                f"{provider.name} already has a machine pool named {row.name} that the portal did not make: "
                "rename this one, or remove that one at the provider"
            )
        elif drift:
            current, answer = (
                provider.update(desired, current),
                f"drift corrected at {provider.name}: " + "; ".join(drift),
            )
            outcome.corrected.append(row.name)
        elif diff := differences(desired, current.spec, provider.fields):
            current, answer = provider.update(desired, current), f"updated at {provider.name}: " + "; ".join(diff)
            outcome.updated.append(row.name)
        else:
            answer = f"in step with {provider.name}"
            outcome.in_step.append(row.name)
    except ProviderError as error:
        _record(row, error, outcome, drift)
        return
    now, ready = nodes.get(row.name, (0, 0))
    count = current.nodes_now if current.nodes_now is not None else now
    _later(
        outcome,
        row,
        state=_state(desired.fewest_nodes, desired.most_nodes, count),
        provider_id=current.provider_id,
        nodes_now=count,
        nodes_ready=ready,
        last_answer=answer,
        attempts=0,
    )


def _state(fewest: int, most: int, nodes: int) -> str:
    return State.READY if fewest <= nodes <= max(most, fewest) else State.SCALING


def _record(row: MachinePool, error: ProviderError, outcome: Outcome, drift: list[str] | None = None) -> None:
    prefix = "drifted (" + "; ".join(drift) + "); correcting it failed: " if drift else ""
    if error.transient:
        outcome.retrying.append(row.name)
        state = State.RETRYING
    else:
        outcome.failed.append(row.name)
        state = State.FAILED
    outcome.error = str(error)
    _later(outcome, row, state=state, last_answer=prefix + str(error), attempts=row.attempts + 1)


def _record_all(rows: list[MachinePool], error: ProviderError, outcome: Outcome) -> None:
    for row in rows:
        _record(row, error, outcome)
    outcome.error = str(error)


def _write(row: MachinePool, **status) -> None:
    """The status only (a queryset update: no save signal, `updated_at` untouched, so a later edit of the
    definition is still seen as newer than the provider's answer)."""
    MachinePool.objects.filter(pk=row.pk).update(**_stamped(status))
    for name, value in status.items():
        setattr(row, name, value)


def _later(outcome: Outcome, row: MachinePool, **status) -> None:
    outcome.statuses[row.pk] = _stamped(status)


def _stamped(status: dict) -> dict:
    return {**status, "last_answer": status.get("last_answer", "")[:2000], "last_answer_at": timezone.now()}


def _flush(outcome: Outcome) -> None:
    """The pass's statuses, in one transaction (one commit, not one per pool)."""
    with transaction.atomic():
        for pk, status in outcome.statuses.items():
            MachinePool.objects.filter(pk=pk).update(**status)
    outcome.statuses.clear()


def _inventory_counts(backend: Backend) -> dict[str, tuple[int, int]]:
    """Machine pool name -> (nodes, ready schedulable nodes), from the backend's node inventory."""
    total, ready = Counter(), Counter()
    nodes = Node.objects.filter(backend=backend, labels__has_key=MACHINEPOOL_LABEL)
    for labels, is_ready, cordoned in nodes.values_list("labels", "ready", "unschedulable"):
        name = labels[MACHINEPOOL_LABEL]
        total[name] += 1
        ready[name] += bool(is_ready and not cordoned)
    return {name: (total[name], ready[name]) for name in total}


def backends_to_reconcile() -> list[int]:
    """Backends with a machine provider or with machine pools (periodic pass)."""
    with_provider = Backend.objects.exclude(machine_provider="").values_list("pk", flat=True)
    with_pools = MachinePool.objects.values_list("backend_id", flat=True).distinct()
    return sorted(set(with_provider) | set(with_pools))


@contextlib.contextmanager
def passes_deferred() -> Iterator[None]:
    """Rows saved inside queue no pass: a writer that knows the provider cannot answer yet (`seed_demo`,
    before `make dev` starts the simulated cluster) leaves the first pass to the periodic one."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)


def schedule(backend_id: int) -> bool:
    """Queue a pass over the backend once the current transaction commits (eager without a broker), once per
    transaction; a broker that is down is logged, never the writer's error. Returns whether it queued (not
    while `passes_deferred`)."""
    if _deferred.get():
        return False

    def enqueue() -> None:
        from clusters import tasks  # lazy: Celery and the broker client only when something is queued

        tasks.reconcile_machine_pools.delay(backend_id)

    return once_after_commit("machine_pools_of", backend_id, enqueue)


def machine_pool_changed(sender, instance: MachinePool, **kwargs) -> None:
    """post_save / post_delete of a MachinePool row (clusters.apps): put the provider in step."""
    schedule(instance.backend_id)
