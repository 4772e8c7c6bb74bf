"""A year of a 10,000-GPU fleet in a database of its own (issue #36; docs/scale.md): `make fleet`.

    python -m bench.fleet [--scale 1.0] [--database pool_portal_fleet] [--keep]

builds, in a separate PostgreSQL database (created if missing; dropped and rebuilt unless --keep finds it
already built), 20 backends of 2,500 nodes (12,400 GPUs of five types, spot T4 machine pools), 100 pools with
300 platforms, 100 node pools with quotas for 500 projects of 50 departments, 2,000 users, and a year of
history: 1,000,000 workflows with 3,000,000 tasks, their events, node-pool parts, and the usage record as
retention leaves it (raw attempts and workflow records of the last 90 days, hourly and daily rollups of the
year, the cumulative totals). `--scale` multiplies every count (tests build a tiny fleet with `generate`).

The configuration goes through the portal's own doors (bench/fleet_config.py); the history is written with
PostgreSQL's COPY, in chunks, ids assigned here. Deterministic for a given seed and start time.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    backends: int
    nodes_per_backend: int
    pools: int
    platforms_per_pool: int
    node_pools: int
    departments: int
    projects: int
    users: int
    workflows: int
    days: int = 365


FULL = Shape(
    backends=20,
    nodes_per_backend=2500,
    pools=100,
    platforms_per_pool=3,
    node_pools=100,
    departments=50,
    projects=500,
    users=2000,
    workflows=1_000_000,
)


def shape(scale: float) -> Shape:
    """FULL with every count multiplied by `scale` (at least enough of each to be a fleet)."""

    def scaled(full: int, least: int) -> int:
        return max(least, round(full * scale))

    backends = scaled(FULL.backends, 2)
    return Shape(
        backends=backends,
        nodes_per_backend=scaled(FULL.nodes_per_backend, 10),
        pools=scaled(FULL.pools, backends),
        platforms_per_pool=3,
        node_pools=scaled(FULL.node_pools, backends),
        departments=scaled(FULL.departments, 2),
        projects=scaled(FULL.projects, 4),
        users=scaled(FULL.users, 5),
        workflows=scaled(FULL.workflows, 50),
    )


def generate(scale: float = 1.0, *, seed: int = 36, now: float | None = None, log=print) -> dict[str, int]:
    """Build the fleet in the current database (configured, migrated, empty of fleet data)."""
    from bench import fleet_config, fleet_history

    fs = shape(scale)
    began = time.perf_counter()
    config = fleet_config.build(fs)
    log(f"config: {time.perf_counter() - began:.1f} s ({fs})")
    counts = fleet_history.history(config, fs, seed=seed, now=now, log=log)
    log(f"history: {time.perf_counter() - began:.1f} s in all")
    return counts


# --- make fleet ------------------------------------------------------------------------------------------
def _admin_url(url: str, database: str) -> tuple[str, str]:
    base = url.rsplit("/", 1)[0]
    return f"{base}/postgres", f"{base}/{database}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=float(os.environ.get("FLEET_SCALE", "1")))
    parser.add_argument("--database", default=os.environ.get("FLEET_DATABASE", "pool_portal_fleet"))
    parser.add_argument("--server", default=os.environ.get("FLEET_SERVER", "postgres://postgres@127.0.0.1:5432"))
    parser.add_argument("--keep", action="store_true", help="keep a fleet database already built")
    args = parser.parse_args(argv)
    if args.database in ("postgres", "pool_portal") or args.database.startswith("test_"):
        parser.error(f"--database {args.database}: the fleet needs a database of its own")
    import psycopg

    with psycopg.connect(f"{args.server}/postgres", autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [args.database]).fetchone()
        if exists and args.keep:
            print(f"{args.database} is there (--keep): nothing to do")
            return
        if exists:
            admin.execute(f'DROP DATABASE "{args.database}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{args.database}"')
    os.environ["DATABASE_URL"] = f"{args.server}/{args.database}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    began = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    print(f"migrated: {time.perf_counter() - began:.1f} s")
    counts = generate(args.scale)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE") if connection.connection.autocommit else cursor.execute("ANALYZE")
        cursor.execute("SELECT pg_database_size(current_database())")
        size = cursor.fetchone()[0]
    elapsed = time.perf_counter() - began
    for key, value in sorted(counts.items()):
        print(f"  {key}: {value:,}")
    print(f"fleet at scale {args.scale} in {args.database}: {elapsed:.0f} s, {size / 2**30:.2f} GiB")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
