"""A synthetic workload for the what-if (docs/quotas.md, "A synthetic workload"): the jobs a CLI file
(`quota what-if --workload FILE`, JSON or YAML) or the REST body's `workload` list gives, in place of the
recorded period's workflows, shaped like the engine's input (pools.engine.replay.ReplayJob):

    - {project: vision, node_pool: h100, gpus: 8, submit_offset_s: 0, duration_s: 3600}
    - {id: eval-1, project: speech, node_pool: h100, gpus: 16, submit_offset_s: 600, duration_s: 7200, priority: HIGH}

Every number is bounded, and a job out of bounds is refused naming it (`workload[3].gpus`), its value and why:
at most MAX_JOBS jobs (the bound on every list a client sends), a file at most MAX_FILE_BYTES; `gpus` 1 to
MAX_GPUS, `submit_offset_s` from 0 to the period's length (it is submitted within the period), `duration_s` 1 to
MAX_DURATION_S; `project` a project and `node_pool` a node pool the caller sees; `priority` HIGH, NORMAL or LOW;
`id` (default `job-<n>`, its place in the list from 1) at most 100 characters, unique. Pure parsing: the names
are checked against what the caller passes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

from pools.engine.quota_pass import PRIORITY_RANK
from pools.engine.replay import ReplayJob
from portal.errors import DomainError
from portal.numbers import MAX_LIST_ITEMS
from portal.safe_yaml import Limits, SafeYAMLError, load

MAX_JOBS = MAX_LIST_ITEMS  # 1,000
MAX_FILE_BYTES = 256 * 1024  # 1,000 jobs of one line each take about 120 KiB
MAX_GPUS = 100_000  # as a change's gpu=
MAX_DURATION_S = 31 * 86_400  # the longest period
MAX_ID = 100
KEYS = ("id", "project", "node_pool", "gpus", "submit_offset_s", "duration_s", "priority")
REQUIRED = ("project", "node_pool", "gpus", "submit_offset_s", "duration_s")


def load_file(path: str | Path, option: str = "--workload") -> object:
    """The file's document (a list, checked by `parse`); too large, unreadable or not JSON/YAML: refused naming
    `option`. Its size is checked before it is read."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise DomainError(f"the file has {size} bytes, at most {MAX_FILE_BYTES}", field=option, value=str(path))
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DomainError(f"cannot read the file: {exc}", field=option, value=str(path)) from None
    limits = Limits(MAX_FILE_BYTES, MAX_JOBS * (2 * len(KEYS) + 1) + 1, 3, None, "workload")
    try:
        return load(text, limits, str(path))
    except SafeYAMLError as error:
        raise DomainError(error.reason, field=option, value=str(path)) from None


def parse(
    items: object,
    *,
    seconds: int,
    project_known: Callable[[str], bool],
    node_pools: Collection[str],
    field: str = "workload",
) -> list[ReplayJob]:
    """The jobs of `items` (a list of mappings) for a period of `seconds`, sorted by submission."""
    if not isinstance(items, list) or not items:
        raise DomainError("must be a non-empty list of jobs", field=field, value=_short(items))
    if len(items) > MAX_JOBS:
        raise DomainError(f"at most {MAX_JOBS} jobs, not {len(items)}", field=field, value=len(items))
    jobs, seen = [], set()
    for index, item in enumerate(items):
        at = f"{field}[{index}]"
        job = _job(item, index, at, seconds, project_known, node_pools)
        if job.id in seen:
            raise DomainError("names a job already in the workload", field=f"{at}.id", value=job.id)
        seen.add(job.id)
        jobs.append(job)
    return sorted(jobs, key=lambda job: (job.arrival, job.id))


def _job(item, index: int, at: str, seconds: int, project_known, node_pools) -> ReplayJob:
    if not isinstance(item, dict):
        raise DomainError(f"must be a job: {{{', '.join(REQUIRED)}}}", field=at, value=_short(item))
    unknown = sorted(str(key) for key in item if key not in KEYS)
    if unknown:
        raise DomainError(f"unknown field; allowed fields are {', '.join(KEYS)}", field=f"{at}.{unknown[0]}")
    for key in REQUIRED:
        if key not in item:
            raise DomainError("is required", field=f"{at}.{key}")
    job_id = item.get("id", f"job-{index + 1}")
    if not isinstance(job_id, str) or not 0 < len(job_id) <= MAX_ID:
        raise DomainError(f"must be a text of 1 to {MAX_ID} characters", field=f"{at}.id", value=_short(job_id))
    project, node_pool = item["project"], item["node_pool"]
    if not isinstance(project, str) or not project_known(project):
        raise DomainError("unknown project", field=f"{at}.project", value=_short(project))
    if not isinstance(node_pool, str) or node_pool not in node_pools:
        raise DomainError("unknown node pool", field=f"{at}.node_pool", value=_short(node_pool))
    gpus = _whole(item["gpus"], 1, MAX_GPUS, f"{at}.gpus", "GPUs it asks")
    submitted = _whole(item["submit_offset_s"], 0, seconds - 1, f"{at}.submit_offset_s", "seconds after the start")
    duration = _whole(item["duration_s"], 1, MAX_DURATION_S, f"{at}.duration_s", "seconds it runs once started")
    priority = item.get("priority", "NORMAL")
    if priority not in PRIORITY_RANK:
        raise DomainError("must be HIGH, NORMAL or LOW", field=f"{at}.priority", value=_short(priority))
    return ReplayJob(job_id, project, {node_pool: gpus}, submitted, duration, priority)


def _whole(value, low: int, high: int, field: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise DomainError(f"must be a whole number from {low} to {high} ({what})", field=field, value=_short(value))
    return value


def _short(value):
    """A value as an error may quote it: long texts and collections cut."""
    text = value if isinstance(value, (int, float, type(None))) and not isinstance(value, bool) else str(value)
    return text[:100] if isinstance(text, str) else text
