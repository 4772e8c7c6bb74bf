"""`quota what-if`'s table (quotas/management/commands/quota.py): per project, what actually happened, the
baseline replay (today's quotas) and the proposed one, then what the change does right now."""

from __future__ import annotations

COLUMNS = (
    ("jobs", "JOBS"),
    ("wait_p50_s", "WAIT P50"),
    ("wait_p95_s", "WAIT P95"),
    ("gpu_hours", "GPU-H"),
    ("preemptions", "PREEMPT"),
    ("idle_guarantee_gpu_hours", "IDLE GUAR. GPU-H"),
    ("cost", "COST"),
)
RIGHT = frozenset({header for _, header in COLUMNS})


def minutes(seconds) -> str:
    if seconds is None:
        return "-"
    return f"{seconds / 60:.1f}m"


def cell(key: str, value) -> str:
    if value is None:
        return "-"
    if key.startswith("wait_"):
        return minutes(value)
    return f"{value:,.2f}" if isinstance(value, float) else str(value)


def table_rows(answer: dict) -> tuple[list[str], list[list[str]]]:
    headers = ["PROJECT", "DEPARTMENT", "RUN", *(header for _, header in COLUMNS)]
    rows = []
    for project in answer["projects"]:
        for run in ("actual", "baseline", "proposed"):
            figures = project[run]
            rows.append(
                [
                    project["project"] if run == "actual" else "",
                    (project["department"] or "-") if run == "actual" else "",
                    run,
                    *(cell(key, figures.get(key)) for key, _ in COLUMNS),
                ]
            )
    return headers, rows


def summary(answer: dict) -> str:
    changes = "; ".join(answer["changes"]) or "none (the proposed run is the baseline)"
    if answer.get("workload") == "synthetic":
        return (
            f"what-if {answer['start']} → {answer['end']}: a synthetic workload of {answer['workflows']} jobs"
            f" replayed (nothing actually happened); changes: {changes}"
        )
    return (
        f"what-if {answer['start']} → {answer['end']}: {answer['workflows']} workflows replayed"
        f" ({answer['left_out']} left out: a node pool that no longer exists); changes: {changes}"
    )


def right_now_lines(answer: dict) -> list[str]:
    lines = []
    for effect in answer["right_now"]:
        said = [
            f"{label} {', '.join(effect[key])}"
            for key, label in (
                ("admits", "admits"),
                ("no_longer_admits", "no longer admits"),
                ("preempts", "preempts"),
                ("above_deserved", "above their new deserved (preemptible once re-admitted):"),
            )
            if effect[key]
        ]
        lines.append(f"right now in {effect['node_pool']}: {'; '.join(said) or 'nothing changes'}")
    return lines
