"""The fleet's history (issue #36; bench/fleet.py): a year of workflows, their tasks, events, node-pool parts and
the usage record as retention leaves it, written with PostgreSQL's COPY in chunks, ids assigned here.

While it loads, the big tables' secondary indexes are dropped (and built again at the end) and, as a superuser,
the session's foreign-key triggers are off (`session_replication_role = replica`): every row written here refers
to rows that exist, and the checks would double the time.
"""

from __future__ import annotations

import io
import json
import math
import random
import time
import uuid
from collections import defaultdict

from bench.fleet_rows import (
    DAY,
    FINISHED,
    GPUS_PER_NODE,
    GPUS_PER_TASK,
    LIVE,
    LIVE_SHARE,
    NAMES,
    OUTCOME,
    PRICE_PER_NODE,
    RAW_DAYS,
    TASK_COUNTS,
    CopyRows,
    N,
    end_event,
    pod_template,
    ts,
)

CHUNK = 20_000  # workflows per COPY round
BIG_TABLES = (
    "workflows_workflow",
    "workflows_task",
    "workflows_taskevent",
    "workflows_workflowpart",
    "usage_taskattempt",
    "usage_workflowrecord",
)


def history(config, shape, *, seed: int = 36, now: float | None = None, log=print) -> dict[str, int]:
    """Write `shape.workflows` workflows over `shape.days` days before `now` with their tasks, events, parts
    and usage record (bench/fleet_config.py's `FleetConfig` names what they refer to). Returns the counts."""
    from django.db import connection

    from bench.fleet_config import group_sizes
    from clusters.schedulers.routing import DEFAULT_NODE_POOL_SUFFIX
    from pools.models import Pool

    rng = random.Random(seed)
    rand, choice = rng.random, rng.choice
    now = now if now is not None else time.time()
    start = now - shape.days * DAY
    raw_from = now - RAW_DAYS * DAY
    sizes = group_sizes(shape.nodes_per_backend)
    pool_ids = dict(Pool.objects.values_list("name", "pk"))
    user_names = dict(zip(config.users, (f"user{u:05d}" for u in range(len(config.users))), strict=True))
    pools = [
        (
            pool_ids[name],
            name,
            backend,
            [(p, config.node_pools.get((backend, p), f"{backend}{DEFAULT_NODE_POOL_SUFFIX}")) for p in platforms],
        )
        for name, backend, platforms in config.pools
    ]
    templates = {
        (name, p, np): pod_template(name, p, np, "gpu" if GPUS_PER_NODE[p] else "")
        for _, name, _, platforms in pools
        for p, np in platforms
    }
    finished_statuses = [s for s, w in FINISHED for _ in range(w)]
    live_statuses = [s for s, w in LIVE for _ in range(w)]
    live_from = shape.workflows - max(1, round(shape.workflows * LIVE_SHARE))
    with connection.cursor() as cursor:
        cursor.execute("SELECT coalesce(max(id), 0) FROM workflows_workflow")
        wf_id = cursor.fetchone()[0]
        cursor.execute("SELECT coalesce(max(id), 0) FROM workflows_task")
        task_id = cursor.fetchone()[0]
        cursor.execute("SELECT coalesce(max(id), 0) FROM workflows_workflowpart")
        part_id = cursor.fetchone()[0]
    counters: dict[str, int] = defaultdict(int)
    hours: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    totals: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    counts = defaultdict(int)
    out = CopyRows()
    indexes = _drop_indexes()
    step = shape.days * DAY / shape.workflows
    began = time.perf_counter()
    for n in range(shape.workflows):
        wf_id += 1
        created = start + (n + rand()) * step
        pool_pk, pool, backend, platforms = pools[int(rand() * len(pools))]
        platform, node_pool = platforms[int(rand() * len(platforms))]
        user = config.users[int(rand() * len(config.users))]
        mine = config.user_projects[user]
        project_pk, project, department = config.projects[mine[int(rand() * len(mine))]]
        name = NAMES[int(rand() * len(NAMES))]
        counters[name] += 1
        workflow_id = f"{name}-{counters[name]}"
        live = n >= live_from
        status = choice(live_statuses) if live else choice(finished_statuses)
        k = choice(TASK_COUNTS)
        per_node = GPUS_PER_NODE[platform]
        gpu = choice(GPUS_PER_TASK.get(platform, (1,))) if per_node else 0
        cpu, mem = (8000 * max(1, gpu), 64 * 2**30 * max(1, gpu)) if per_node else (4000, 16 * 2**30)
        ran = status not in ("QUEUED", "PENDING", "FAILED_QUEUE_TIMEOUT", "FAILED_SUBMISSION", "FAILED_BACKEND_ERROR")
        if status == "CANCELLED" and rand() < 0.3:
            ran = False  # cancelled while it waited
        wait = min(-math.log(1 - rand()) * 600, 6 * 3600)
        run = min(math.exp(rng.gauss(8.2, 1.4)), 7 * DAY)  # median about an hour
        admitted = created + wait if ran or status == "WAITING" else None
        started = admitted + 30 + rand() * 60 if ran else None
        if live:
            finished = None
            started = started if status == "RUNNING" else None
            if started is not None and started > now:
                started = now - rand() * 60
                admitted = started - 60
        else:
            finished = (started + run) if ran else created + (wait if status != "FAILED_SUBMISSION" else 1)
            if finished > now:
                finished = now - rand() * 300
        group = platform
        requests = {"gpu": gpu * k, "cpu": cpu * k, "memory": mem * k}
        requests_json = json.dumps(requests, separators=(",", ":"))
        wuuid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        tasks = [f"task-{i}" for i in range(k)]
        spec = {
            "workflow": {
                "name": name,
                "pool": pool,
                "tasks": [
                    {
                        "name": t,
                        "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                        "command": ["bash", "-c"],
                        "args": ["python -m train --config /data/config.yaml"],
                        "platform": platform,
                        "resources": {"gpu": gpu, "cpu": cpu // 1000, "memory": f"{mem >> 30}Gi"},
                    }
                    for t in tasks
                ],
            }
        }
        queue_reason = (
            {
                "code": "QUOTA",
                "text": f"waiting for {gpu * k} GPUs in {node_pool}",
                "resource": "gpu",
                "position": int(rand() * 100) + 1,
            }
            if status == "QUEUED"
            else {}
        )
        preemptible = rand() < 0.1
        out.row(
            "workflows_workflow",
            str(wf_id),
            workflow_id,
            wuuid,
            name,
            choice(("NORMAL", "NORMAL", "NORMAL", "HIGH", "LOW")),
            status,
            json.dumps(spec, separators=(",", ":")),
            '{"team":"' + department + '"}',
            "172800",
            N,
            "[]",
            "pods could not be created: the cluster refused them" if status == "FAILED_BACKEND_ERROR" else "",
            ts(created),
            ts(started) if started else N,
            ts(finished) if finished else N,
            str(pool_pk),
            str(user),
            str(project_pk),
            ts(admitted) if admitted else N,
            node_pool,
            "t" if preemptible else "f",
            '{"reason":"reclaim","by":"a project under its deserved quota"}' if status == "FAILED_PREEMPTED" else "{}",
            json.dumps(queue_reason, separators=(",", ":")),
            requests_json,
            user_names[user] if status == "CANCELLED" else "",
            N,
            "[]",
        )
        part_id += 1
        out.row(
            "workflows_workflowpart",
            str(part_id),
            node_pool,
            json.dumps(tasks),
            requests_json,
            ts(admitted) if admitted and status != "QUEUED" else N,
            "t" if preemptible else "f",
            str(wf_id),
        )
        counts["workflows"] += 1
        counts["parts"] += 1
        if status == "FAILED_SUBMISSION":
            continue  # refused before its tasks were written
        template = templates[(pool, platform, node_pool)]
        nodes_in_group = sizes[group]
        in_raw = (finished or now) >= raw_from
        for i, task in enumerate(tasks):
            task_id += 1
            pod_name = f"{workflow_id}-{task}-{wf_id:x}"
            node = f"{backend}-{group}-{int(rand() * nodes_in_group):04d}" if started else ""
            t_status = {"RUNNING": "RUNNING", "QUEUED": "PENDING", "PENDING": "PENDING", "WAITING": "WAITING"}.get(
                status, status
            )
            if status == "FAILED" and i and rand() < 0.7:
                t_status = "COMPLETED"
            pod = (
                template.replace("__POD__", pod_name)
                .replace("__WF__", workflow_id)
                .replace("__TASK__", task)
                .replace("__USER__", user_names[user])
                .replace("__UUID__", wuuid)
                .replace("__CPU__", f"{cpu}m")
                .replace("__MEM__", f"{mem >> 30}Gi")
                .replace("__GPU__", str(gpu))
            )
            pod_created = admitted + 5 + rand() * 20 if admitted else None
            exit_code = (
                {"COMPLETED": "0", "FAILED": "1", "FAILED_PREEMPTED": "3008"}.get(t_status, N)
                if finished and ran
                else N
            )
            out.row(
                "workflows_task",
                str(task_id),
                task,
                task,
                "t" if i == 0 else "f",
                platform,
                pod,
                pod_name,
                "osmo-workflows",
                "{}",
                t_status,
                "0",
                node,
                str(uuid.UUID(int=rng.getrandbits(128), version=4)) if pod_created else "",
                exit_code,
                "",
                ts(created),
                ts(pod_created) if pod_created else N,
                ts(started) if started else N,
                ts(finished) if finished else N,
                str(wf_id),
                "t",
                "",
                "Error" if t_status == "FAILED" else "",
                "[]",
                node_pool,
            )
            counts["tasks"] += 1
            events = [(created, "SUBMITTED", f"submitted by {user_names[user]}")]
            if pod_created:
                events.append((pod_created, "CREATED", f"pod osmo-workflows/{pod_name} created"))
            if started:
                events.append((started - 10, "SCHEDULED", f"scheduled on node {node}"))
                events.append((started, "RUNNING", f"running on node {node}"))
            if finished:
                if started:
                    events.append((finished, *end_event(t_status)))
                elif status == "FAILED_QUEUE_TIMEOUT":
                    events.append((finished, "QUEUE_TIMEOUT", "waited longer than its queue timeout"))
                elif status == "FAILED_BACKEND_ERROR":
                    events.append((finished, "BACKEND_ERROR", "the cluster refused the pod: admission webhook denied"))
                else:
                    events.append((finished, "CANCELLED", "cancelled by its submitter"))
            for at, kind, message in events:
                stamp = ts(at)
                out.row("workflows_taskevent", stamp, kind, message, str(task_id), stamp)
            counts["events"] += len(events)
            if started:
                ended = finished
                seconds = (ended or now) - started
                capacity = "spot" if group == "t4-spot" else "on-demand"
                share = gpu / per_node if per_node else cpu / 32000
                cost = round(PRICE_PER_NODE[group] * share * 1_000_000)
                outcome = OUTCOME.get(t_status, "running") if ended else "running"
                if ended:
                    hour = int(started // 3600) * 3600
                    key = (
                        hour,
                        project,
                        department,
                        node_pool,
                        pool,
                        platform,
                        backend,
                        config.instance_types[group],
                        capacity,
                    )
                    sums = hours[key]
                    sums[0] += round(gpu * seconds)
                    sums[1] += round(cpu * seconds)
                    sums[2] += round((mem >> 20) * seconds)
                    sums[3] += round(cost * seconds / 3600)
                    sums[4] += 1
                    total = totals[(project, node_pool)]
                    total[0] += round(gpu * seconds)
                    total[1] += round(cost * seconds / 3600)
                if in_raw:
                    out.row(
                        "usage_taskattempt",
                        str(task_id),
                        "0",
                        workflow_id,
                        task,
                        pod_name,
                        project,
                        department,
                        pool,
                        platform,
                        node_pool,
                        backend,
                        node,
                        config.instance_types[group],
                        capacity,
                        str(gpu),
                        str(cpu),
                        str(mem),
                        ts(started),
                        ts(ended) if ended else N,
                        outcome,
                        str(cost),
                        f"catalog {config.instance_types[group]}",
                        ts(started),
                        "t" if ended and ended < now - 3600 else "f",
                    )
                    counts["attempts"] += 1
        if finished and finished >= raw_from:
            out.row(
                "usage_workflowrecord",
                workflow_id,
                project,
                department,
                pool,
                node_pool,
                backend,
                "NORMAL",
                requests_json,
                json.dumps({node_pool: requests}, separators=(",", ":")),
                ts(created),
                ts(admitted) if admitted else N,
                ts(started) if started else N,
                ts(finished),
                status,
                "t" if preemptible else "f",
                "1" if status == "FAILED_PREEMPTED" else "0",
                ts(finished),
            )
            counts["workflow records"] += 1
        if (n + 1) % CHUNK == 0 or n + 1 == shape.workflows:
            with connection.cursor() as cursor:
                out.flush(cursor)
            if (n + 1) % (CHUNK * 10) == 0:
                log(f"  {n + 1:,} workflows, {counts['tasks']:,} tasks ({time.perf_counter() - began:.0f} s)")
    counts.update(_rollups(hours, totals))
    _restore(indexes, log)
    with connection.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO workflows_workflowname (name, last_number) VALUES (%s, %s) "
            "ON CONFLICT (name) DO UPDATE SET last_number = EXCLUDED.last_number",
            list(counters.items()),
        )
        for table in (
            "workflows_workflow",
            "workflows_task",
            "workflows_workflowpart",
            "workflows_taskevent",
            "usage_taskattempt",
            "usage_workflowrecord",
            "usage_usagerollup",
            "usage_usagetotal",
        ):
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"(SELECT coalesce(max(id), 0) + 1 FROM {table}), false)"
            )
    return dict(counts)


def _rollups(hours: dict, totals: dict) -> dict[str, int]:
    """Hourly and daily rollups of the year (each attempt in the hour it started: an approximation of the rollup
    job, which splits an attempt over the hours it ran) and the cumulative totals."""
    from django.db import connection

    days: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0, 0, 0])
    buffer = io.StringIO()
    for (hour, *dims), sums in hours.items():
        buffer.write("\t".join(("hour", ts(hour), *dims, *map(str, sums))) + "\n")
        day = days[(int(hour // DAY) * int(DAY), *dims)]
        for i, value in enumerate(sums):
            day[i] += value
    for (day, *dims), sums in days.items():
        buffer.write("\t".join(("day", ts(day), *dims, *map(str, sums))) + "\n")
    columns = (
        "granularity, period_start, project, department, node_pool, pool, platform, backend, instance_type, "
        "capacity_type, gpu_seconds, cpu_milli_seconds, memory_mib_seconds, cost_micros, attempts"
    )
    with connection.cursor() as cursor:
        with cursor.copy(f"COPY usage_usagerollup ({columns}) FROM STDIN") as copy:
            copy.write(buffer.getvalue())
        with cursor.copy("COPY usage_usagetotal (project, node_pool, gpu_seconds, cost_micros) FROM STDIN") as copy:
            copy.write("".join(f"{p}\t{np}\t{g}\t{c}\n" for (p, np), (g, c) in totals.items()))
    return {"hourly rollups": len(hours), "daily rollups": len(days), "usage totals": len(totals)}


def _drop_indexes() -> list[str]:
    """Drop the big tables' secondary indexes (not those behind a constraint) and turn this session's
    foreign-key triggers off when allowed; returns the definitions `_restore` builds again."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.indexname, i.indexdef FROM pg_indexes i WHERE i.tablename = ANY(%s) AND NOT EXISTS "
            "(SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname)",
            [list(BIG_TABLES)],
        )
        found = cursor.fetchall()
        for name, _ in found:
            cursor.execute(f'DROP INDEX "{name}"')
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        if cursor.fetchone()[0]:
            cursor.execute("SET session_replication_role = replica")
    return [definition for _, definition in found]


def _restore(definitions: list[str], log) -> None:
    from django.db import connection

    began = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = DEFAULT")
        cursor.execute("SET maintenance_work_mem = '512MB'")
        for definition in definitions:
            cursor.execute(definition)
    log(f"  {len(definitions)} indexes built again: {time.perf_counter() - began:.0f} s")
