"""`python -m soak --minutes N` (`make soak MINUTES=N`): see soak/run.py and docs/operations.md, "Soak"."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from soak.run import Options, main


def parse(argv: list[str]) -> Options:
    parser = argparse.ArgumentParser(prog="python -m soak", description=__doc__)
    parser.add_argument("--minutes", type=float, default=30.0, help="minutes of load (default 30)")
    parser.add_argument("--rate", type=float, default=2.0, help="submissions a second (default 2)")
    parser.add_argument("--outage-seconds", type=float, default=60.0, help="the cluster API outage (default 60)")
    parser.add_argument("--cycles", type=int, default=None, help="rounds of every fault (default: one per 15 min)")
    parser.add_argument(
        "--server",
        default=os.environ.get("SOAK_DATABASE_SERVER", "postgres://postgres@127.0.0.1:5432/postgres"),
        help="a URL of the PostgreSQL server (any database on it)",
    )
    parser.add_argument(
        "--database", default="pool_portal_soak", help="the soak's database, recreated (default pool_portal_soak)"
    )
    parser.add_argument("--keep-database", action="store_true", help="leave the database for a look afterwards")
    parser.add_argument(
        "--logs", type=Path, default=None, help="the processes' logs (default: a new temporary directory)"
    )
    args = parser.parse_args(argv)
    return Options(
        minutes=args.minutes,
        rate=args.rate,
        outage_seconds=args.outage_seconds,
        cycles=args.cycles,
        server=args.server,
        database=args.database,
        keep_database=args.keep_database,
        logs=args.logs,
    )


if __name__ == "__main__":
    sys.exit(main(parse(sys.argv[1:])))
