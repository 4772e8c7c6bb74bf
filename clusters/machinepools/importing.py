"""`machinepool import --terraform FILE`: the machine pools a Terraform file's calls of the seed's module make,
created through the config store (configs.store.apply_many: the same parsing, checks, revisions and refusals
as `config update MACHINE_POOL`), all or none. A dry run does the same inside a transaction it rolls back, so
it refuses what the import would refuse and shows the documents as they would be stored.

A refusal of a document is said in the file's words: the store's `taints[0].effect` of pool `batch-workers`
becomes `main.tf:31 module.machine_pools.additional_pool_taints[0].effect`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction

from clusters.machinepools.terraform import ImportedPool, TerraformError, read
from clusters.models import Backend, MachinePool
from configs import registry, store
from configs.errors import ConfigError
from configs.models import ConfigType
from configs.revisions import Actor


@dataclass
class ImportedRow:
    name: str
    backend: str
    document: dict  # as stored (or as it would be)
    revision: int | None  # None in a dry run


@dataclass
class ImportResult:
    dry_run: bool
    pools: list[ImportedRow]
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "dry_run": self.dry_run,
            "pools": [vars(row) for row in self.pools],
            "notes": self.notes,
        }


def import_terraform(
    text: str, filename: str, actor: Actor, *, backend: str | None = None, dry_run: bool = False
) -> ImportResult:
    size = len(text.encode())
    if size > settings.CONFIG_DOCUMENT_MAX_BYTES:  # the bound of every config document a file holds
        raise TerraformError(
            f"is {size} bytes; a file of config documents is at most {settings.CONFIG_DOCUMENT_MAX_BYTES} "
            "(CONFIG_DOCUMENT_MAX_BYTES)",
            field=filename,
        )
    reading = read(text, filename)
    if not reading.pools:
        raise TerraformError(
            "makes no machine pool: no call of the machine-pools module (source ./modules/machine-pools) with "
            "create_additional_pool or create_gpu_spot_pool = true",
            field=filename,
        )
    backends = _backends(reading.pools, backend, filename)
    documents = {pool.name: {"backend": backends[pool.name], **pool.document} for pool in reading.pools}
    by_name = {pool.name: pool for pool in reading.pools}
    with transaction.atomic():
        _refuse_existing(reading.pools, filename)
        try:
            results = store.apply_many(
                ConfigType.MACHINE_POOL, documents, actor, description=f"machinepool import --terraform {filename}"
            )
        except ConfigError as error:
            raise _in_file_words(error, by_name, filename, backend) from None
        stored = _documents([result.name for result in results])
        rows = [
            ImportedRow(result.name, backends[result.name], stored[result.name], None if dry_run else result.revision)
            for result in results
        ]
        warnings = [f"{result.name}: {warning}" for result in results for warning in result.warnings]
        if dry_run:
            transaction.set_rollback(True)
    notes = [*reading.notes, *(note for pool in reading.pools for note in pool.notes), *warnings]
    return ImportResult(dry_run, rows, notes)


def _documents(names: list[str]) -> dict[str, dict]:
    """The pools' documents as stored (what `config show MACHINE_POOL NAME` prints), in one query."""
    handler = registry.get(ConfigType.MACHINE_POOL)
    return {pool.name: handler.snapshot(pool) for pool in handler.queryset().filter(name__in=names)}


def _backends(pools: list[ImportedPool], named: str | None, filename: str) -> dict[str, str]:
    """Each pool's backend: `--backend`, or the backend whose OCM cluster id is the call's literal
    `cluster_id`. A literal id that is another backend's is refused, as is an expression without --backend."""
    literals = {pool.cluster.literal for pool in pools if pool.cluster.literal}
    by_cluster = {b.ocm_cluster_id: b.name for b in Backend.objects.filter(ocm_cluster_id__in=literals)}
    chosen = None
    if named is not None:
        chosen = Backend.objects.filter(name=named).first()
        if chosen is None:
            raise ConfigError(
                "unknown backend; create it first with `config update BACKEND`", field="--backend", value=named
            )
    answer = {}
    for pool in pools:
        cluster = pool.cluster
        at = f"{filename}:{cluster.line} module.{pool.module}.cluster_id"
        owner = by_cluster.get(cluster.literal) if cluster.literal else None
        if chosen is not None:
            if owner is not None and owner != chosen.name:
                raise TerraformError(
                    f"is backend {owner}'s OCM cluster id, not that of --backend {chosen.name}", field=at,
                    value=cluster.literal,
                )  # fmt: skip
            answer[pool.name] = chosen.name
        elif owner is not None:
            answer[pool.name] = owner
        elif cluster.literal is not None:
            raise TerraformError(
                "is no backend's OCM cluster id (ocm_cluster_id); name the backend with --backend", field=at,
                value=cluster.literal,
            )  # fmt: skip
        else:
            raise TerraformError(
                "is an expression the importer cannot resolve; name the backend with --backend", field=at,
                value=cluster.expression,
            )  # fmt: skip
    return answer


def _refuse_existing(pools: list[ImportedPool], filename: str) -> None:
    """Import creates: a name already taken is refused (change an existing pool with `config update`)."""
    taken = dict(
        MachinePool.objects.filter(name__in=[pool.name for pool in pools]).values_list("name", "backend__name")
    )
    for pool in pools:
        if pool.name in taken:
            attribute, line = pool.source_of("name")
            raise TerraformError(
                f"a machine pool of this name exists (on backend {taken[pool.name]}); import creates pools: "
                "choose another name, or change that pool with `config update MACHINE_POOL`",
                field=f"{filename}:{line} module.{pool.module}.{attribute}",
                value=pool.name,
            )


def _in_file_words(error: ConfigError, pools: dict[str, ImportedPool], filename: str, backend: str | None):
    """The store's refusal of pool `name`'s document field, as the Terraform attribute and line it came from."""
    name, _, document_field = error.field.partition(".")
    pool = pools.get(name)
    if pool is None:
        return error
    if document_field == "backend":
        if backend is not None:
            return ConfigError(error.reason, field="--backend", value=error.value)
        attribute, line = "cluster_id", pool.cluster.line
    else:
        attribute, line = pool.source_of(document_field)
    return TerraformError(error.reason, field=f"{filename}:{line} module.{pool.module}.{attribute}", value=error.value)
