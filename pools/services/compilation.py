"""Resolved configuration: each platform's merged template and rule list, computed when config is saved.

Saving a pool, or a template or validation a pool uses, recompiles that pool's platforms with the
engine. A platform whose templates cannot produce a valid Pod, that uses an unknown variable, or whose
rules cannot evaluate, is refused with the path and reason, and the whole write is rolled back.
Submissions and previews read the stored result; they never merge templates again.
"""

from __future__ import annotations

import copy
import json

from django.db import connection
from django.db.models import QuerySet
from psycopg.types.json import Jsonb

from configs.errors import ConfigError
from pools.engine import CompiledPlatform, EngineError, PlatformConfig, check_platform, compile_platform
from pools.models import Platform, PlatformTemplate, PlatformValidation, Pool, PoolTemplate, PoolValidation
from pools.services.snapshots import pools_for_snapshot


def platform_config(pool: Pool, platform: Platform) -> PlatformConfig:
    """The engine's input for one platform, from prefetched pool and platform rows."""
    return PlatformConfig(
        pool=pool.name,
        platform=platform.name,
        templates=[(ref.template.name, ref.template.body) for ref in _ordered(pool.template_refs.all())]
        + [(ref.template.name, ref.template.body) for ref in _ordered(platform.template_refs.all())],
        rule_sets=[(ref.validation.name, ref.validation.rules) for ref in _ordered(pool.validation_refs.all())]
        + [(ref.validation.name, ref.validation.rules) for ref in _ordered(platform.validation_refs.all())],
        pool_variables=dict(pool.common_default_variables),
        platform_variables=dict(platform.default_variables),
        host_network_allowed=platform.host_network_allowed,
        privileged_allowed=platform.privileged_allowed,
        allowed_mounts=list(platform.allowed_mounts),
    )


def compile_checked(pool: Pool, platform: Platform, shared: dict | None = None) -> CompiledPlatform:
    """Compile one platform and run the config-save checks; raise ConfigError naming the first problem.

    `shared` (one batch's dict) reuses the compilation of an identical config of another pool: compiling
    reads the pool's name only to store it, so many pools with the same templates, rules and variables
    merge and compile them once. The checks still run per pool (the sample pod reads the pool's name)."""
    return _checked(platform_config(pool, platform), shared)


def _checked(config: PlatformConfig, shared: dict | None) -> CompiledPlatform:
    where = f"platforms.{config.platform}"
    try:
        compiled = _compile(config, shared)
    except EngineError as error:
        raise _config_error(error, where, config.platform) from None
    problems = check_platform(compiled)
    if problems:
        raise _config_error(problems[0], where, config.platform, more=len(problems) - 1)
    return compiled


def _compile(config: PlatformConfig, shared: dict | None) -> CompiledPlatform:
    if shared is None or not isinstance(config.pool, str) or not config.pool:
        return compile_platform(config)
    key = json.dumps({**config.to_json(), "pool": ""}, sort_keys=True, default=str)
    same = shared.get(key)
    if same is None:
        shared[key] = same = compile_platform(config)
        return same
    compiled = copy.copy(same)  # the compiled template and rules are immutable and shared; the config is its own
    compiled.config = config
    compiled.warnings = list(same.warnings)
    return compiled


def recompile_pools(pools: QuerySet[Pool]) -> None:
    """Recompute and store the resolved config of every platform of `pools` (one update)."""
    changed, shared = [], {}
    for pk, stored, config in platform_configs(pools):
        compiled = _checked(config, shared).to_json()
        if compiled != stored:
            changed.append((pk, compiled))
    if changed:
        _store_compiled(changed)


def platform_configs(pools: QuerySet[Pool]) -> list[tuple[int, dict, PlatformConfig]]:
    """(platform id, stored compiled config, engine input) of every platform of `pools`, pools by name then
    platforms by name: `platform_config` of each, read as plain rows (eight queries and no model instances,
    which for a large import cost more than its checks)."""
    pool_rows = list(
        Pool.objects.filter(pk__in=pools.values("pk")).values_list("pk", "name", "common_default_variables")
    )
    pool_ids = [pk for pk, _, _ in pool_rows]
    platform_rows = list(
        Platform.objects.filter(pool_id__in=pool_ids)
        .order_by("name")
        .values_list(
            "pk",
            "pool_id",
            "name",
            "default_variables",
            "host_network_allowed",
            "privileged_allowed",
            "allowed_mounts",
            "compiled",
        )
    )
    platform_ids = [row[0] for row in platform_rows]
    templates = _references(PoolTemplate, "pool_id", pool_ids, PlatformTemplate, "platform_id", platform_ids)
    rules = _references(PoolValidation, "pool_id", pool_ids, PlatformValidation, "platform_id", platform_ids)
    by_pool: dict[int, list] = {pk: [] for pk in pool_ids}
    for row in platform_rows:
        by_pool[row[1]].append(row)
    found = []
    for pool_id, pool_name, pool_variables in pool_rows:
        for pk, _, name, variables, host_network, privileged, mounts, stored in by_pool[pool_id]:
            config = PlatformConfig(
                pool=pool_name,
                platform=name,
                templates=templates[0].get(pool_id, []) + templates[1].get(pk, []),
                rule_sets=rules[0].get(pool_id, []) + rules[1].get(pk, []),
                pool_variables=dict(pool_variables),
                platform_variables=dict(variables),
                host_network_allowed=host_network,
                privileged_allowed=privileged,
                allowed_mounts=list(mounts),
            )
            found.append((pk, stored, config))
    return found


def _references(pool_model, pool_owner, pool_ids, platform_model, platform_owner, platform_ids) -> tuple[dict, dict]:
    """({pool id: [(name, body)]}, {platform id: [(name, body)]}) of one kind of ordered reference, in order."""
    target = pool_model._meta.get_field("template" if pool_model is PoolTemplate else "validation")
    content = "body" if pool_model is PoolTemplate else "rules"
    lists = []
    for model, owner, ids in ((pool_model, pool_owner, pool_ids), (platform_model, platform_owner, platform_ids)):
        lists.append(
            list(model.objects.filter(**{f"{owner}__in": ids}).values_list(owner, "position", "id", target.attname))
        )
    wanted = {row[3] for rows in lists for row in rows}
    objects = dict(
        (pk, (name, value))
        for pk, name, value in target.related_model.objects.filter(pk__in=wanted).values_list("pk", "name", content)
    )
    result = []
    for rows in lists:
        ordered: dict[int, list] = {}
        for owner_id, _, _, target_id in sorted(rows, key=lambda row: (row[1], row[2])):
            ordered.setdefault(owner_id, []).append(objects[target_id])
        result.append(ordered)
    return result[0], result[1]


def _store_compiled(changed: list[tuple[int, dict]]) -> None:
    """On PostgreSQL, one UPDATE from one JSON object `{platform id: compiled}`: Django's bulk_update (a CASE
    of one branch per row) and an array of JSON values both cost more than compiling a large import."""
    if connection.vendor != "postgresql":
        Platform.objects.bulk_update([Platform(pk=pk, compiled=data) for pk, data in changed], ["compiled"], 500)
        return
    table = Platform._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table} AS platform SET compiled = new.value "  # noqa: S608 (our own table name)
            "FROM jsonb_each(%s::jsonb) AS new WHERE platform.id = new.key::bigint",
            [Jsonb({str(pk): compiled for pk, compiled in changed})],
        )


def compiled_platform(platform: Platform) -> CompiledPlatform:
    """The stored compiled platform (cached by content in the engine); compiled now if never stored."""
    if platform.compiled:
        return CompiledPlatform.from_json(platform.compiled)
    pool = pools_for_snapshot().get(pk=platform.pool_id)
    return compile_checked(pool, next(p for p in pool.platforms.all() if p.pk == platform.pk))


def _config_error(error: EngineError, where: str, platform: str, more: int = 0) -> ConfigError:
    field = f"{where}.{error.field}" if error.field else where
    suffix = f" (and {more} more problem{'s' if more > 1 else ''})" if more > 0 else ""
    return ConfigError(f"platform {platform}: {error.reason}{suffix}", field=field, value=error.value)


def _ordered(refs):
    return sorted(refs, key=lambda ref: (ref.position, ref.id))
