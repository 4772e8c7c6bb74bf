"""`watcher_health WATCHER [BACKEND…]`: the watchers' probe; exit 1 when a backend's heartbeat is stale.

`--ok-without-database` (the liveness probe): a database that does not answer says nothing about the
watcher, which holds its events and waits for it (clusters.watchloop); restarting it would not help.
"""

from __future__ import annotations

import math

from django.db import DatabaseError

from clusters import heartbeat, leases
from portal.commands import PortalCommand
from portal.errors import DomainError, PortalError

MAX_AGE_MOST = 86_400.0  # a day: a heartbeat older than that says nothing any more


class StaleHeartbeat(PortalError):
    status = 503
    code = "stale_heartbeat"


class Command(PortalCommand):
    help = (
        "Check that a watcher (watch_cluster or watch_workflows) beats for every backend it watches (those "
        "named, else every one it has beaten for) within --max-age seconds; exit 1 otherwise. With --this-replica, "
        "the replica of this host and the backends it holds (the watchers' liveness and readiness probe)."
    )

    def add_arguments(self, parser):
        parser.add_argument("watcher", choices=heartbeat.WATCHERS)
        parser.add_argument("names", nargs="*", metavar="BACKEND", help="backends it watches (default: all)")
        parser.add_argument(
            "--max-age",
            default=60.0,
            metavar="SECONDS",
            help="oldest heartbeat still alive (60; above 0, at most 86400)",
        )
        parser.add_argument(
            "--this-replica",
            action="store_true",
            help="check this replica only ($WATCHER_REPLICA, else the host name: the pod's), and the backends it "
            "holds (the replicas' probe; clusters.leases)",
        )
        parser.add_argument(
            "--ok-without-database",
            action="store_true",
            help="pass when the database does not answer (liveness: a restart would not bring it back)",
        )

    def handle(self, *args, **options):
        try:
            seconds = max_age(options["max_age"])
            if options["this_replica"]:
                found = heartbeat.replica_health(options["watcher"], leases.default_name(), seconds)
            else:
                found = heartbeat.health(options["watcher"], options["names"] or None, seconds)
        except DatabaseError as error:
            reason = f"database unreachable ({type(error).__name__}): the heartbeat cannot be read"
            if not options["ok_without_database"]:
                raise StaleHeartbeat(reason) from error
            self.stdout.write(f"{reason}; not failing")
            return
        if not found.ok:
            raise StaleHeartbeat("; ".join(found.lines))
        for line in found.lines:
            self.stdout.write(line)


def max_age(raw: object) -> float:
    """Seconds above 0 and at most MAX_AGE_MOST (`nan`, `inf`, `-1` refused: NaN compares false to every age)."""
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = math.nan
    if not 0 < seconds <= MAX_AGE_MOST:
        raise DomainError(
            f"must be a number of seconds above 0 and at most {MAX_AGE_MOST:g}", field="--max-age", value=raw
        )
    return seconds
