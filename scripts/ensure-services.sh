#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on loopback; start them if installed but down.
set -euo pipefail

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null || (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

wait_for() {  # wait_for NAME CHECK: poll with a deadline instead of a fixed sleep
  local name=$1 check=$2 deadline=$((SECONDS + 30))
  until $check; do
    if (( SECONDS > deadline )); then echo "error: $name did not come up on 127.0.0.1 within 30 s" >&2; exit 1; fi
    sleep 0.2
  done
}

if ! pg_up; then
  if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
    echo "PostgreSQL is down; starting it"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    wait_for PostgreSQL pg_up
  else
    echo "error: PostgreSQL does not answer on 127.0.0.1:5432 and is not installed here." >&2
    echo "       Install it (apt-get install postgresql) or set TEST_DATABASE_URL to a reachable server." >&2
    exit 1
  fi
fi

if ! redis_up; then
  if command -v redis-server >/dev/null 2>&1; then
    echo "Redis is down; starting it"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >/dev/null
    wait_for Redis redis_up
  else
    echo "error: Redis does not answer on 127.0.0.1:6379 and is not installed (apt-get install redis-server)." >&2
    exit 1
  fi
fi
echo "PostgreSQL and Redis answer on 127.0.0.1"
