"""Node inventory use cases: full sync of a backend, watch events, and the backend's sync status.

* `sync_backend(id)`: list every node and pod (paginated), then write in one transaction: bulk upsert
  of changed nodes, deletion of nodes the complete list lacks, `clusters.signals.nodes_changed` for the
  changed nodes (pools recomputes their membership in the same transaction), status.
  If listing fails, nothing is written but the backend is marked degraded with the error and time.
* `apply_node_event` / `apply_pod_event`: what the watcher (`clusters.inventory_watch`) does
  for one watch event, using a `PodIndex` it keeps in memory between events.

Per node we store the summed requests of non-terminal pods bound to it, portal workloads (pods
labelled `pool-portal/workflow`) and others apart, so the pods themselves need no table.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from django.db import connection, models, transaction
from django.db.models import Count
from django.utils import timezone

from access import epoch
from clusters.config_types import BACKEND_SECRETS
from clusters.kube.connection import KubeClient, connect
from clusters.kube.errors import KubeError
from clusters.kube.node_pod_lists import PodRecord, list_nodes, list_pods, node_record, pod_record
from clusters.models import CAPACITY_COLUMNS, Backend, Node
from clusters.signals import nodes_changed, nodes_deleted
from portal import generation, metrics
from portal.errors import NotFound
from portal.secrets import is_unreadable

log = logging.getLogger(__name__)


class Fenced(Exception):
    """A watcher's write was refused: the backend's lease is no longer its own (clusters.leases)."""


BATCH_SIZE = 500
NODE_FIELDS = (
    "labels",
    "taints",
    "allocatable",
    "capacity",
    "conditions",
    "unschedulable",
    "ready",
    "gpu_product",
    "resource_version",
)
SUM_FIELDS = (
    "requested_workload",
    "requested_other",
    "workload_pods",
    "other_pods",
    *(f"{column}_used" for column in CAPACITY_COLUMNS.values()),
)
PLACEMENT_FIELDS = ("labels", "taints", "unschedulable")  # what node membership (pools, quotas) depends on
ALLOCATABLE_FIELDS = tuple(f"{column}_allocatable" for column in CAPACITY_COLUMNS.values())
# what a node adds to its node pool's capacity (quotas.services.capacity): a change moves the inventory epoch
CAPACITY_FIELDS = ("ready", "unschedulable", "gpu_product", *ALLOCATABLE_FIELDS)
UPSERT_FIELDS = (*NODE_FIELDS, *ALLOCATABLE_FIELDS, *SUM_FIELDS, "fingerprint", "last_seen")


# ------------------------------------------------------------------------------------------ pod sums


@dataclass
class NodeSums:
    workload: dict[str, int] = field(default_factory=dict)
    other: dict[str, int] = field(default_factory=dict)
    workload_pods: int = 0
    other_pods: int = 0

    def add(self, pod: PodRecord, sign: int) -> None:
        target = self.workload if pod.workload else self.other
        for name, amount in pod.requests.items():
            total = target.get(name, 0) + sign * amount
            if total:
                target[name] = total
            else:
                target.pop(name, None)
        if pod.workload:
            self.workload_pods += sign
        else:
            self.other_pods += sign

    def columns(self) -> dict:
        used = {
            f"{column}_used": self.workload.get(name, 0) + self.other.get(name, 0)
            for name, column in CAPACITY_COLUMNS.items()
        }
        return {
            "requested_workload": dict(sorted(self.workload.items())),
            "requested_other": dict(sorted(self.other.items())),
            "workload_pods": self.workload_pods,
            "other_pods": self.other_pods,
            **used,
        }


class PodIndex:
    """Active pods (bound, not Succeeded/Failed) by key, and their summed requests per node."""

    def __init__(self) -> None:
        self.pods: dict[str, PodRecord] = {}
        self.nodes: dict[str, NodeSums] = {}
        self.unwritten: set[str] = set()  # nodes whose sums changed here but not yet in the database

    @classmethod
    def build(cls, records: Iterable[PodRecord]) -> PodIndex:
        index = cls()
        for record in records:
            index.put(record)
        return index

    def put(self, record: PodRecord) -> set[str]:
        """Apply the pod's current state; return the nodes whose sums changed: none when what the inventory
        keeps of it is the same (a pod starting, or its status reporting, moves no node's sums)."""
        if self.pods.get(record.key) == record:
            return set()
        affected = self.remove(record.key)
        if record.active:
            self.pods[record.key] = record
            self.nodes.setdefault(record.node, NodeSums()).add(record, +1)
            affected.add(record.node)
        return affected

    def remove(self, key: str) -> set[str]:
        old = self.pods.pop(key, None)
        if old is None:
            return set()
        sums = self.nodes[old.node]
        sums.add(old, -1)
        if not sums.workload_pods and not sums.other_pods:
            del self.nodes[old.node]
        return {old.node}

    def columns(self, node: str) -> dict:
        return (self.nodes.get(node) or NodeSums()).columns()


# ------------------------------------------------------------------------------------------ full sync


@dataclass
class SyncResult:
    backend: str
    nodes: int
    pods: int
    created: int
    updated: int
    deleted: int
    pages: int
    seconds: float
    nodes_version: str = ""
    pods_version: str = ""
    index: PodIndex | None = field(default=None, repr=False)

    def as_dict(self) -> dict:
        return {key: value for key, value in vars(self).items() if key != "index"}


def sync_backend(
    backend_id: int, *, kube: KubeClient | None = None, fence: Callable[[str, str], bool] | None = None
) -> SyncResult:
    """List nodes and pods, then replace the backend's inventory with what was listed (see module doc).

    Raises KubeError (after marking the backend degraded) when the cluster cannot be listed. `fence`, the
    watcher's lease check (clusters.watchloop), is asked first in the writing transaction with the lists'
    resourceVersions (nodes, pods); when it says no, nothing is written and `Fenced` is raised.
    """
    backend = Backend.objects.get(pk=backend_id)
    started = time.perf_counter()
    try:
        client = kube or connect(backend)
        try:
            nodes = list_nodes(client)
            pods = list_pods(client)
        finally:
            if kube is None:
                client.close()
    except KubeError as error:
        mark_degraded(backend.pk, error)
        raise
    index = PodIndex.build(pods.records)
    with transaction.atomic():
        if fence is not None and not fence(nodes.resource_version, pods.resource_version):
            raise Fenced(f"backend #{backend_id}: the watcher's lease is no longer held; nothing written")
        created, updated, deleted = write_nodes(backend.pk, nodes.records, index, complete=True)
        mark_synced(backend.pk)
    metrics.INVENTORY_SYNC_SECONDS.labels(backend.name).observe(time.perf_counter() - started)
    result = SyncResult(
        backend.name,
        len(nodes.records),
        len(pods.records),
        created,
        updated,
        deleted,
        nodes.pages + pods.pages,
        time.perf_counter() - started,
        nodes.resource_version,
        pods.resource_version,
        index,
    )
    log.debug(
        "backend %s: synced %d nodes (%d new, %d changed, %d gone) and %d pods in %.2fs",
        backend.name,
        result.nodes,
        created,
        updated,
        deleted,
        result.pods,
        result.seconds,
    )
    return result


def write_nodes(backend_id: int, records: list[dict], index: PodIndex, *, complete: bool) -> tuple[int, int, int]:
    """Upsert nodes that changed (content or pod sums); with `complete`, delete nodes not in `records`.

    Queries: one read of the stored fingerprints, one upsert per BATCH_SIZE changed nodes, one
    `last_seen` update, plus what `nodes_changed` receivers do for the nodes whose labels, taints or cordon
    changed (pools: their membership). Without `complete` (watch events, a few nodes) that read also
    returns the nodes' previous labels, taints and cordon, sent as `previous` so receivers can skip a node
    whose change cannot move it.
    """
    now = timezone.now()
    names = [record["name"] for record in records]
    stored, previous, config_generation = _stored_nodes(backend_id, None if complete else names)
    rows, placement_changed, created, capacity_changed = [], [], 0, False
    for record in records:
        fingerprint = node_fingerprint(record)
        sums = index.columns(record["name"])
        old = stored.get(record["name"])
        if old is not None and old[1] == fingerprint and old[2] == tuple(sums[key] for key in SUM_FIELDS):
            continue
        if old is None or old[1] != fingerprint:
            placement_changed.append(record["name"])
        created += old is None
        capacity_changed = capacity_changed or old is None or old[3] != _capacity_of(record)
        rows.append(
            Node(
                backend_id=backend_id,
                name=record["name"],
                fingerprint=fingerprint,
                first_seen=now,
                last_seen=now,
                **{key: record[key] for key in NODE_FIELDS},
                **_allocatable(record),
                **sums,
            )
        )
    for start in range(0, len(rows), BATCH_SIZE):
        upsert_nodes(rows[start : start + BATCH_SIZE])
    if capacity_changed:  # node pools' capacity cached per process is stale (a node gone moves the charging epoch)
        epoch.bump(epoch.INVENTORY)
    deleted = 0
    if complete:
        listed = set(names)
        gone = [entry[0] for name, entry in stored.items() if name not in listed]
        for start in range(0, len(gone), BATCH_SIZE):
            deleted += Node.objects.filter(pk__in=gone[start : start + BATCH_SIZE]).delete()[1].get("clusters.Node", 0)
        if deleted:
            nodes_deleted.send(sender=Node, backend_id=backend_id)
        Node.objects.filter(backend_id=backend_id).update(last_seen=now)
    if placement_changed:  # in this transaction: what depends on placement (membership) commits with the nodes
        changed = set(placement_changed)
        written = [row for row in rows if row.name in changed] if all(row.pk for row in rows) else None
        nodes_changed.send(
            sender=Node,
            backend_id=backend_id,
            names=placement_changed,
            nodes=written,
            previous={name: previous[name] for name in placement_changed if name in previous} if previous else None,
            generation=config_generation,
        )
    return created, len(rows) - created, deleted


def upsert_nodes(rows: list[Node]) -> None:
    """`bulk_create(rows, update_conflicts=True, unique_fields=[backend, name], update_fields=UPSERT_FIELDS)`,
    with the rows sent as one JSON document read by `jsonb_to_recordset`: Django's UNNEST insert sends each
    JSON column as a text array that psycopg escapes quote by quote in Python, and its VALUES insert builds
    thirty placeholders per node; either takes seconds for 5,000 nodes. Sets each row's pk."""
    if not rows:
        return
    if connection.vendor != "postgresql":  # SQLite (the single-machine install): Django's own upsert
        Node.objects.bulk_create(
            rows, update_conflicts=True, unique_fields=["backend", "name"], update_fields=list(UPSERT_FIELDS)
        )
        return
    fields = [f for f in Node._meta.concrete_fields if not f.primary_key]
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in fields)
    record_type = ", ".join(f"{quote(f.column)} {f.db_type(connection).split('(')[0]}" for f in fields)
    updated = [Node._meta.get_field(name).column for name in UPSERT_FIELDS]
    updates = ", ".join(f"{quote(column)} = EXCLUDED.{quote(column)}" for column in updated)
    document = json.dumps(
        [{f.column: _json_value(getattr(row, f.attname)) for f in fields} for row in rows], separators=(",", ":")
    )
    table = quote(Node._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM jsonb_to_recordset(%s::jsonb) AS r({record_type}) "
            f"ON CONFLICT ({quote('backend_id')}, {quote('name')}) DO UPDATE SET {updates} RETURNING id, name",
            [document],
        )
        ids = {name: pk for pk, name in cursor.fetchall()}
    for row in rows:
        row.pk = ids[row.name]
        row._state.adding = False


def _json_value(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


def _stored_nodes(backend_id: int, names: list[str] | None) -> tuple[dict, dict, str | None]:
    """What `write_nodes` compares with: name → (pk, fingerprint, sums, capacity) of the backend's stored nodes
    (only `names` when given), and for those named also their PLACEMENT_FIELDS (name → dict: `previous`) and the
    config generation, read with them.

    One query in SQL of its own, its values converted as the ORM would (JSON, booleans): a watch event is this read
    and an upsert, and this read through the ORM took 1.34 ms against 0.46 ms here for one node, the database's own
    part about 0.1 ms (docs/scale.md, "Timestamps, capacity and the rest")."""
    watched = names is not None  # watch events: a few nodes, whose former placement the receivers want
    if watched and not names:
        return {}, {}, None
    fields = ("id", "name", "fingerprint", *SUM_FIELDS, *CAPACITY_FIELDS, *(PLACEMENT_FIELDS if watched else ()))
    generation_sql = generation.read_sql(connection.vendor) if watched else None
    quote = connection.ops.quote_name
    select = ", ".join(quote(Node._meta.get_field(f).column) for f in fields)
    if generation_sql is not None:
        select += f", {generation_sql}"
    where, params = f"{quote(Node._meta.get_field('backend').column)} = %s", [backend_id]
    if watched:
        where += f" AND {quote(Node._meta.get_field('name').column)} IN ({', '.join(['%s'] * len(names))})"
        params += names
    convert = [_converter(f) for f in fields]
    sums_end = 3 + len(SUM_FIELDS)
    capacity_end = sums_end + len(CAPACITY_FIELDS)
    stored, previous, config_generation = {}, {}, None
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {select} FROM {quote(Node._meta.db_table)} WHERE {where}", params)  # noqa: S608
        for raw in cursor.fetchall():  # the converters stop before the generation, the last column when read
            row = [value if to is None or value is None else to(value) for to, value in zip(convert, raw, strict=False)]
            name = row[1]
            stored[name] = (row[0], row[2], tuple(row[3:sums_end]), tuple(row[sums_end:capacity_end]))
            if watched:
                placement = row[capacity_end : capacity_end + len(PLACEMENT_FIELDS)]
                previous[name] = dict(zip(PLACEMENT_FIELDS, placement, strict=True))
            if generation_sql is not None:
                config_generation = raw[-1]
    return stored, previous, config_generation


def _converter(name: str):
    """How a raw cursor's value of the Node field becomes what the ORM returns: JSON columns come back as text
    (Django's PostgreSQL connection leaves jsonb undecoded; SQLite stores text), booleans as 0/1 on SQLite."""
    field = Node._meta.get_field(name)
    if isinstance(field, models.JSONField):
        return lambda value: json.loads(value) if isinstance(value, str) else value
    if isinstance(field, models.BooleanField):
        return bool
    return None


def _allocatable(record: dict) -> dict[str, int]:
    """A node record's ALLOCATABLE_FIELDS, as the row stores them."""
    units = record["units"]
    return {f"{column}_allocatable": units.get(name, 0) for name, column in CAPACITY_COLUMNS.items()}


def _capacity_of(record: dict) -> tuple:
    """A node record's CAPACITY_FIELDS, as the stored row holds them."""
    allocatable = _allocatable(record)
    return (
        record["ready"],
        record["unschedulable"],
        record["gpu_product"],
        *(allocatable[f] for f in ALLOCATABLE_FIELDS),
    )


def node_fingerprint(record: dict) -> str:
    content = [record[key] for key in ("labels", "taints", "allocatable", "capacity", "conditions", "unschedulable")]
    return hashlib.sha1(json.dumps(content, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


# ------------------------------------------------------------------------------------------ watch events


Fence = Callable[[], bool]  # a watcher's lease check, asked first in the writing transaction (clusters.leases)


def _fenced(fence: Fence | None) -> None:
    if fence is not None and not fence():
        raise Fenced("the watcher's lease is no longer held; nothing written")


def apply_node_event(
    backend_id: int, event_type: str, raw: dict, index: PodIndex, *, fence: Fence | None = None
) -> None:
    """ADDED/MODIFIED: upsert (a no-op write when nothing we keep changed); DELETED: remove the node.
    `fence`: asked first in the transaction; `Fenced` (nothing written) when it says no."""
    record = node_record(raw)
    with transaction.atomic():  # one commit per event
        _fenced(fence)
        if event_type == "DELETED":
            if Node.objects.filter(backend_id=backend_id, name=record["name"]).delete()[0]:
                nodes_deleted.send(sender=Node, backend_id=backend_id)
            return
        write_nodes(backend_id, [record], index, complete=False)


def apply_pod_event(
    backend_id: int, event_type: str, raw: dict, index: PodIndex, *, fence: Fence | None = None
) -> set[str]:
    """Update the in-memory index, then the sums of the (at most two) nodes the pod left or joined.

    The nodes stay in `index.unwritten` until their sums are written: applied again after a database error,
    the event changes nothing more in the index, and the sums it changed are written then. `fence`: asked
    first in the transaction that writes sums (none when the event changes no sums)."""
    record = pod_record(raw)
    affected = index.remove(record.key) if event_type == "DELETED" else index.put(record)
    index.unwritten |= affected
    write_sums(backend_id, sorted(index.unwritten), index, fence=fence)
    index.unwritten.clear()
    return affected


def write_sums(backend_id: int, node_names: Iterable[str], index: PodIndex, *, fence: Fence | None = None) -> None:
    node_names = list(node_names)
    if not node_names:
        return
    with transaction.atomic():
        _fenced(fence)
        for name in node_names:
            Node.objects.filter(backend_id=backend_id, name=name).update(**index.columns(name))


def replace_pods(backend_id: int, index: PodIndex) -> int:
    """After a pod relist: write the sums of every node whose sums differ from `index`; returns that count."""
    changed = []
    for node in Node.objects.filter(backend_id=backend_id).only("pk", "name", *SUM_FIELDS):
        columns = index.columns(node.name)
        if any(getattr(node, key) != value for key, value in columns.items()):
            for key, value in columns.items():
                setattr(node, key, value)
            changed.append(node)
    Node.objects.bulk_update(changed, list(SUM_FIELDS), batch_size=BATCH_SIZE)
    return len(changed)


def replace_nodes(backend_id: int, records: list[dict], index: PodIndex) -> tuple[int, int, int]:
    """After a node relist: the listed nodes are the complete set."""
    with transaction.atomic():
        return write_nodes(backend_id, records, index, complete=True)


# ------------------------------------------------------------------------------------------ status


def mark_synced(backend_id: int) -> None:
    Backend.objects.filter(pk=backend_id).update(
        sync_status=Backend.SyncStatus.OK, online=True, last_sync_at=timezone.now()
    )


def mark_online(backend_id: int) -> None:
    """A watch reconnected: the cluster answers again (the last error stays for the record)."""
    Backend.objects.filter(pk=backend_id).exclude(sync_status=Backend.SyncStatus.NEVER).update(
        sync_status=Backend.SyncStatus.OK, online=True
    )


def mark_degraded(backend_id: int, error: Exception) -> None:
    """Record the failure; the inventory keeps what the last successful sync wrote."""
    Backend.objects.filter(pk=backend_id).update(
        sync_status=Backend.SyncStatus.DEGRADED,
        online=False,
        last_error=str(error)[:2000],
        last_error_at=timezone.now(),
    )
    log.warning("backend #%s degraded: %s", backend_id, error)


def record_server_version(backend_id: int, version: str) -> None:
    Backend.objects.filter(pk=backend_id).update(server_version=version[:64])


def reencrypt_secrets() -> tuple[int, list[str]]:
    """Write every backend's secrets again, encrypted with the first key (after a key rotation). Returns the
    count written and the backends whose secrets no configured key opens (left untouched)."""

    count, unreadable = 0, []
    with transaction.atomic():
        for backend in Backend.objects.exclude(token="", kubeconfig="", ocm_token="").select_for_update():
            if any(is_unreadable(getattr(backend, key)) for key in BACKEND_SECRETS):
                unreadable.append(backend.name)
                continue
            backend.save(update_fields=list(BACKEND_SECRETS))
            count += 1
    return count, unreadable


def connected_backends(names: list[str] | None = None):
    query = Backend.objects.exclude(connection="")
    if names:
        query = query.filter(name__in=names)
    return query.order_by("name")


def check_connection(backend: Backend):
    """'Test connection': server version and permissions (`clusters.kube.probe`). Raises KubeError."""
    from clusters.kube.probe import test_connection

    with connect(backend) as kube:
        report = test_connection(kube, backend.namespace, backend.name)
    record_server_version(backend.pk, report.version)
    return report


def get_backend(name: str) -> Backend:
    try:
        return Backend.objects.get(name=name)
    except Backend.DoesNotExist:
        raise NotFound(f"no backend named {name!r}", field="name", value=name) from None


def backend_status() -> list[dict]:
    """One row per backend: connection kind, sync status, node count, last sync and error (no secrets)."""

    rows = Backend.objects.annotate(node_count=Count("nodes")).order_by("name")
    return [
        {
            "name": b.name,
            "connection": b.connection,
            "api_url": b.api_url,
            "sync_status": b.sync_status,
            "online": b.online,
            "nodes": b.node_count,
            "server_version": b.server_version,
            "last_sync_at": b.last_sync_at.isoformat() if b.last_sync_at else None,
            "last_error": b.last_error,
            "last_error_at": b.last_error_at.isoformat() if b.last_error_at else None,
        }
        for b in rows
    ]
