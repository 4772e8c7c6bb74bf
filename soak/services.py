"""The soak's own services, so its faults hit nobody else: a `redis-server` on a free loopback port (restarted by
the Redis fault; never the shared one on 6379) and a PostgreSQL database created fresh for the run (its
connections are the ones the database fault terminates)."""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from soak.stack import free_port, wait_until


class Redis:
    """`redis-server` on 127.0.0.1:<port>, as configured here: no persistence (`--save ""`, no append-only
    file) unless `persistent`. Without it a restart loses every message in it, the worst case the portal must
    recover from (docs/operations.md, "Soak")."""

    def __init__(self, workdir: Path, *, persistent: bool = False) -> None:
        self.workdir, self.persistent = workdir, persistent
        self.port = free_port(19000, 19499)
        self.process: subprocess.Popen | None = None
        self.restarts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        binary = shutil.which("redis-server") or "/usr/sbin/redis-server"
        durability = ["--appendonly", "yes", "--appendfsync", "everysec"] if self.persistent else ["--appendonly", "no"]
        argv = [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", *durability]
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115 - the child writes it until it ends
        self.process = subprocess.Popen(
            [*argv, "--dir", str(self.workdir)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        wait_until(self.answers, timeout=30, what=f"redis-server on port {self.port}")

    def answers(self) -> bool:
        import redis

        with contextlib.suppress(redis.RedisError):
            return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())
        return False

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def restart(self, down_seconds: float = 3.0) -> None:
        """Stopped (SIGTERM: what it holds in memory is gone unless persistent), down a moment, started again on
        the same port."""
        import time

        self.stop()
        time.sleep(down_seconds)  # the outage itself, not a wait for a condition
        self.restarts += 1
        self.start()


def database_url(server: str, name: str) -> str:
    """`postgres://user@host:port/<name>` on the server of `server` (a URL to any of its databases)."""
    parts = urlsplit(server)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))


def admin_connection(server: str):
    """An autocommit connection to the server's `postgres` database (creating, dropping, terminating)."""
    import psycopg

    return psycopg.connect(database_url(server, "postgres"), autocommit=True)


def recreate_database(server: str, name: str) -> str:
    """Drop the soak's database if a previous run left it, create it empty; returns its URL."""
    with admin_connection(server) as connection:
        terminate_connections(server, name, connection=connection)
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return database_url(server, name)


def drop_database(server: str, name: str) -> None:
    with admin_connection(server) as connection:
        terminate_connections(server, name, connection=connection)
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')


def terminate_connections(server: str, name: str, *, connection=None) -> int:
    """pg_terminate_backend on every connection to database `name` (only it: others' databases are untouched);
    returns how many were terminated."""
    query = (
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
    )
    if connection is not None:
        return connection.execute(query, [name]).fetchone()[0]
    with admin_connection(server) as own:
        return own.execute(query, [name]).fetchone()[0]
