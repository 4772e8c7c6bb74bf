"""`watchers [WATCHER]`: which replica of each watcher holds which backend (clusters.leases), and the replicas."""

from __future__ import annotations

from clusters import heartbeat, leases
from portal.commands import PortalCommand


class Command(PortalCommand):
    help = (
        "Show the watchers' replicas and which one holds each backend's lease (watch_cluster, watch_workflows), "
        "with the lease's token, its expiry and the resourceVersions last applied under it."
    )

    def add_arguments(self, parser):
        parser.add_argument("watcher", nargs="?", choices=heartbeat.WATCHERS, help="one watcher (default: both)")
        parser.add_argument("--format", choices=["table", "json"], default="table")

    def handle(self, *args, **options):
        rows, replicas = leases.shards(options["watcher"])
        if options["format"] == "json":
            self.emit(
                {
                    "replicas": [
                        {"watcher": r.watcher, "name": r.name, "host": r.host, "pid": r.pid, "beat_at": r.beat_at}
                        for r in replicas
                    ],
                    "leases": [vars(row) for row in rows],
                }
            )
            return
        for watcher in [options["watcher"]] if options["watcher"] else heartbeat.WATCHERS:
            names = [r.name for r in replicas if r.watcher == watcher]
            mine = [row for row in rows if row.watcher == watcher]
            held = sum(row.live for row in mine)
            self.stdout.write(
                f"{watcher}: {len(names)} live replica(s) ({', '.join(names) or 'none'}); "
                f"{held} of {len(mine)} backend(s) held"
            )
            if mine:
                self.table(
                    ["BACKEND", "REPLICA", "TOKEN", "EXPIRES", "VERSIONS"],
                    [
                        [row.backend, row.holder if row.live else "-", row.token, _expiry(row), _versions(row)]
                        for row in mine
                    ],
                    right=frozenset({"TOKEN"}),
                )


def _expiry(row: leases.Shard) -> str:
    if not row.holder or row.expires_in is None:
        return "free"
    return f"in {row.expires_in:.0f}s" if row.live else f"expired {-row.expires_in:.0f}s ago"


def _versions(row: leases.Shard) -> str:
    return " ".join(f"{key}={value}" for key, value in sorted(row.versions.items())) or "-"
