"""What a resolved task looks like on a page: the pod as indented YAML with each line's origin, the verdict,
the nodes that would take it and why not the others. Shared by the self-service submit preview and the
admin's pod preview (templates/pools/_task_preview.html), so both show a task the same way."""

from __future__ import annotations

from dataclasses import dataclass

from pools.services.preview import annotated_yaml

MAX_REJECTED_SHOWN = 15


@dataclass
class TaskPreview:
    name: str
    platform: str
    ok: bool
    lines: list[tuple[str, str]]
    fits: list[str]
    rejected: list[tuple[str, list[str]]]
    more_rejected: int
    problems: list[str]
    warnings: list[str]
    scale_ups: dict[str, str]  # would-be node (scale from zero) that would take it → what the machine pool adds
    confinement: dict | None = None  # {"node_pool", "node_selector"} the portal adds (pools.confinement)

    @property
    def confinement_selector(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in ((self.confinement or {}).get("node_selector") or {}).items())

    @property
    def fits_now(self) -> list[str]:
        return [node for node in self.fits if node not in self.scale_ups]

    @property
    def verdict(self) -> str:
        if not self.ok:
            return "refused"
        return "fits" if self.fits_now else "scales" if self.scale_ups else "queues"

    @property
    def verdict_text(self) -> str:
        if not self.ok:
            return "Would be refused"
        if self.fits_now:
            count = len(self.fits_now)
            return f"Would start now: {count} node{'s' if count != 1 else ''} can take it"
        if self.scale_ups:
            return "Would start once a machine pool adds a node"
        return "Accepted, but no node has room right now: it would wait in the queue"


def preview_tasks(result: dict) -> list[TaskPreview]:
    """One TaskPreview per task of a dry run (`workflows.services.submit`) result."""
    return [task_preview(task) for task in result.get("tasks", [])]


def task_preview(task: dict) -> TaskPreview:
    """One resolved task (a dry run's task, or `pools.services.preview.preview`'s result) as the page shows it."""
    validation = task.get("validation") or {}
    problems = [f"{f.get('message')} ({f.get('rule', 'rule')})" for f in validation.get("static", [])]
    problems += [f"{g['field']}: {g['reason']}" for g in validation.get("gates", [])]
    problems += [f"{s['path']}: {s['reason']}" for s in validation.get("schema", [])]
    nodes = validation.get("nodes")
    if nodes and not nodes.get("passed"):
        problems.append(nodes.get("error") or "no node of the platform satisfies the resource rules")
    placement = task.get("placement") or {"fits": [], "rejected": {}}
    rejected = sorted(placement.get("rejected", {}).items())
    fits = list(placement.get("fits", []))
    would_be = placement.get("would_be") or {}
    return TaskPreview(
        name=task["name"],
        platform=task["platform"],
        ok=bool(task.get("ok")),
        lines=annotated_yaml(task["pod"], task.get("provenance") or {}) if task.get("pod") else [],
        fits=fits,
        rejected=rejected[:MAX_REJECTED_SHOWN],
        more_rejected=max(0, len(rejected) - MAX_REJECTED_SHOWN),
        problems=problems,
        warnings=list(task.get("warnings") or []),
        scale_ups={node: would_be[node] for node in fits if node in would_be},
        confinement=task.get("confinement"),
    )
