"""`workflow submit|list|show|events|cancel`: OSMO's workflow verbs for the operator on the server.

    manage.py workflow submit train.yaml --pool team-a --user alice [--project vision] [--dry-run] [--priority LOW]
                                                                    [--format json]
    manage.py workflow list [--user alice] [--pool team-a] [--status RUNNING] [--limit 50] [--format json]
    manage.py workflow show train-resnet-7 [--format json]
    manage.py workflow events train-resnet-7 [--format json]
    manage.py workflow explain train-resnet-7 [--format json]   # why it waits (queued) or why it was preempted
    manage.py workflow cancel train-resnet-7 [--force] [--message "wrong data"]
    manage.py workflow charge-projects    # past workflows → their submitter's only project (docs/teams.md)

`submit` acts as `--user` (default: $PORTAL_CLI_USER), with that user's roles: access.policy decides as
for the API. The other verbs are the operator's view of every workflow (like the config CLI).
Errors print one line (`error: <field>: <reason> (value: …)`) and exit 1.

Each verb imports what it uses when it runs (submission and its engine, the serializers, the log reader and
the Kubernetes client, cancel): the command itself loads none of them (docs/performance.md, CLI).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import yaml

from portal.commands import PortalCommand
from portal.docfiles import DocumentError
from portal.numbers import MAX_PAGE, checked_int
from workflows.errors import InvalidSpec


class Command(PortalCommand):
    help = "Submit, list, show and cancel workflows."

    def add_arguments(self, parser):
        verbs = parser.add_subparsers(dest="verb", required=True)
        sub = verbs.add_parser("submit", help="submit a workflow spec (YAML or JSON) to a pool")
        sub.add_argument("file", help="the spec file, or - for standard input")
        sub.add_argument("--pool", "-p", required=True)
        sub.add_argument(
            "--user",
            default=os.environ.get("PORTAL_CLI_USER", ""),
            help="submit as this user, with their roles (default: $PORTAL_CLI_USER)",
        )
        sub.add_argument("--priority", default="NORMAL", help="HIGH, NORMAL or LOW")
        sub.add_argument(
            "--project", default="", help="the project to charge (default: the user's only project; see docs/teams.md)"
        )
        sub.add_argument("--dry-run", action="store_true", help="resolve and show the pods; store nothing")
        sub.add_argument("--validation-only", action="store_true", help="validate only; store nothing")
        _format(sub)
        listing = verbs.add_parser("list", help="workflows, newest first")
        listing.add_argument("--user", "-u", action="append", default=[], help="submitted by (repeatable)")
        listing.add_argument("--pool", "-p", action="append", default=[], help="in pool (repeatable)")
        listing.add_argument("--status", "-s", action="append", default=[], help="with status (repeatable)")
        listing.add_argument("--limit", default=50, help="1-1000 (50)")
        _format(listing)
        for verb, text in (("show", "one workflow with its tasks"), ("events", "what happened to its tasks")):
            one = verbs.add_parser(verb, help=text)
            one.add_argument("workflow_id")
            _format(one)
        log_verb = verbs.add_parser("logs", help="its tasks' container logs, read from the cluster")
        log_verb.add_argument("workflow_id")
        log_verb.add_argument("--task", "-t", default="", help="only this task")
        log_verb.add_argument("--tail", "-n", default="", help="last lines per task")  # "": logs.DEFAULT_TAIL
        _format(log_verb)
        explain = verbs.add_parser(
            "explain", help="its status and, when queued, why it waits (numbers, queue position); when preempted, why"
        )
        explain.add_argument("workflow_id")
        _format(explain)
        cancel_verb = verbs.add_parser("cancel", help="cancel a workflow and delete its pods")
        cancel_verb.add_argument("workflow_id")
        cancel_verb.add_argument("--force", action="store_true", help="also for a finished workflow: delete its pods")
        cancel_verb.add_argument("--message", default="")
        _format(cancel_verb)
        verbs.add_parser(
            "charge-projects",
            help=("charge workflows without a project to their submitter's only project (after creating projects)"),
        )

    def handle(self, *args, **options):
        getattr(self, f"do_{options['verb'].replace('-', '_')}")(options)

    # ------------------------------------------------------------------------------------------ verbs

    def do_submit(self, options):
        from access.services import users
        from workflows.services import SubmitRequest, submit
        from workflows.spec import SpecError

        if not options["user"]:
            raise InvalidSpec("name the submitter with --user (or set PORTAL_CLI_USER)", field="--user")
        text, source = _read(options["file"])
        try:
            result = submit(
                SubmitRequest(
                    pool=options["pool"],
                    spec=text,
                    who=users.get(options["user"]),
                    priority=options["priority"],
                    project=options["project"],
                    dry_run=options["dry_run"],
                    validation_only=options["validation_only"],
                    source=source,
                )
            )
        except SpecError as error:
            raise InvalidSpec(error.reason, field=error.field, value=error.value) from None
        data = result.as_dict()
        for warning in data["warnings"]:
            self.warn(warning)
        if options["format"] != "text":
            return self.emit(data, options["format"])
        if data["status"] in ("DRY_RUN", "VALID"):
            verdict = "valid" if all(task.get("ok", True) for task in data["tasks"]) else "NOT valid"
            self.stdout.write(
                f"{options['file']}: {verdict} for pool {data['pool']} ({data['status']}; nothing stored)"
            )
            for task in data["tasks"]:
                self.stdout.write(f"- task {task['name']} on platform {task['platform']}")
                if "pod" in task:
                    placement = task.get("placement") or {}
                    self.stdout.write(f"  nodes that fit now: {', '.join(placement.get('fits') or []) or 'none'}")
                    self.stdout.write("  " + yaml.safe_dump(task["pod"], sort_keys=False).replace("\n", "\n  "))
            return None
        self.stdout.write(f"workflow {data['workflow_id']} submitted to pool {data['pool']}: {data['status']}")
        for task in data["tasks"]:
            self.stdout.write(f"- task {task['name']} on platform {task['platform']}: pod {task['pod_name']}")
        return None

    def do_list(self, options):
        from workflows import queries
        from workflows.api import serializers as s

        page = queries.list_workflows(
            None,
            queries.WorkflowQuery(
                users=options["user"],
                pools=options["pool"],
                statuses=options["status"],
                all_users=True,
                limit=checked_int(options["limit"], "--limit", 1, MAX_PAGE),
            ),
        )
        data = s.WorkflowListSerializer(page).data
        if options["format"] != "text":
            return self.emit(data, options["format"])
        rows = [
            (w["workflow_id"], w["pool"], w["submitted_by"], w["status"], w["task_count"], w["submit_time"])
            for w in data["workflows"]
        ]
        self._table(("WORKFLOW", "POOL", "USER", "STATUS", "TASKS", "SUBMITTED"), rows)
        if data["more_entries"]:
            self.stdout.write(f"(more than {data['limit']}; use --limit)")
        return None

    def do_show(self, options):
        from workflows import queries

        data = _detail(queries.visible_workflow(None, options["workflow_id"]))
        if options["format"] != "text":
            return self.emit(data, options["format"])
        self._detail_text(data)
        return None

    def do_events(self, options):
        from workflows import queries
        from workflows.api import serializers as s

        workflow = queries.visible_workflow(None, options["workflow_id"])
        events = s.EventSerializer(queries.events_of(workflow), many=True).data
        if options["format"] != "text":
            return self.emit({"workflow_id": workflow.workflow_id, "events": events}, options["format"])
        self._table(
            ("TIME", "TASK", "EVENT", "MESSAGE"), [(e["time"], e["task"], e["kind"], e["message"]) for e in events]
        )
        return None

    def do_logs(self, options):
        from workflows import logs, queries

        workflow = queries.visible_workflow(None, options["workflow_id"])
        tail = logs.parse_tail(options["tail"], "--tail")
        names = (
            [options["task"]] if options["task"] else list(queries.tasks_of(workflow).values_list("name", flat=True))
        )
        found = [logs.task_log(workflow.workflow_id, name, None, tail=tail) for name in names]
        if options["format"] != "text":
            return self.emit(
                {"workflow_id": workflow.workflow_id, "tasks": [log.as_dict() for log in found]}, options["format"]
            )
        for log in found:
            for line in log.lines:
                self.stdout.write(f"[{log.task}] {line.text}")
            if log.notice:
                self.stdout.write(f"[{log.task}] ({log.notice})")
        return None

    def do_explain(self, options):
        from workflows import queries

        data = explanation(queries.visible_workflow(None, options["workflow_id"]))
        if options["format"] != "text":
            return self.emit(data, options["format"])
        self.stdout.write(f"workflow {data['workflow_id']}: {data['status']}")
        for key in ("project", "node_pool", "priority"):
            if data[key]:
                self.stdout.write(f"{key.replace('_', ' ')}: {data[key]}")
        if data["node_pool"]:
            selector = ", ".join(f"{k}={v}" for k, v in data["node_selector"].items()) or "none"
            self.stdout.write(f"confined to node pool {data['node_pool']}: its pods select {selector}")
        queue = data["queue"]
        if queue:
            self.stdout.write(f"waiting: {queue['reason']}")
            numbers = [
                f"{key.replace('_', ' ')} {queue[key]}"
                for key in ("demand", "allocated", "deserved", "fair_share", "limit", "free", "borrowable")
                if queue.get(key) is not None
            ]
            if numbers:
                self.stdout.write(f"numbers ({queue.get('resource', '')}): {', '.join(numbers)}")
            if queue.get("position"):
                self.stdout.write(f"position in the queue of node pool {queue['node_pool']}: {queue['position']}")
        preemption = data["preemption"]
        if preemption:
            self.stdout.write(f"preempted for workflow {preemption.get('by')}: {preemption.get('text')}")
        if data["admitted_at"]:
            kind = "preemptible (over quota)" if data["preemptible"] else "non-preemptible"
            self.stdout.write(f"admitted: {data['admitted_at']}, {kind}")
        return None

    def do_charge_projects(self, options):
        from django.contrib.auth import get_user_model

        from teams.models import Project
        from workflows.models import Workflow
        from workflows.project_backfill import charge_unassigned

        charged = charge_unassigned(Workflow, Project, get_user_model().groups.through)
        self.stdout.write(f"{charged} workflow{'' if charged == 1 else 's'} charged to their submitter's project")

    def do_cancel(self, options):
        from workflows.lifecycle.cancel import cancel

        workflow = cancel(options["workflow_id"], None, force=options["force"], message=options["message"])
        data = _detail(workflow)
        if options["format"] != "text":
            return self.emit(data, options["format"])
        self.stdout.write(f"workflow {workflow.workflow_id}: {workflow.status}; its pods are being deleted")
        return None

    # ------------------------------------------------------------------------------------------ output

    def _detail_text(self, data: dict) -> None:
        for key in (
            "workflow_id",
            "pool",
            "project",
            "submitted_by",
            "priority",
            "status",
            "submit_time",
            "start_time",
            "end_time",
            "queue_timeout_seconds",
            "exec_timeout_seconds",
            "error",
        ):
            if data.get(key) not in (None, ""):
                self.stdout.write(f"{key.replace('_', ' ')}: {data[key]}")
        for warning in data["warnings"]:
            self.stdout.write(f"warning: {warning}")
        self._table(
            ("TASK", "PLATFORM", "STATUS", "RETRY", "POD", "NODE", "EXIT", "ERROR"),
            [
                (
                    t["name"],
                    t["platform"],
                    t["status"],
                    t["retry_id"],
                    t["pod_name"],
                    t["node"] or "-",
                    "-" if t["exit_code"] is None else t["exit_code"],
                    t["status_message"] or t["error"] or "",  # a pod waiting for a node: why, in words
                )
                for t in data["tasks"]
            ],
        )
        for t in data["tasks"]:
            for spot in t.get("interruptions") or ():
                then = (
                    f"rescheduled as attempt {spot['next_attempt']}"
                    if spot.get("next_attempt")
                    else f"exit action {spot['action']}"
                )
                self.stdout.write(
                    f"task {t['name']}: spot interruption on node {spot['node']} at {spot['at']} "
                    f"(attempt {spot['attempt']}, pod {spot['pod']}); {then}"
                )

    def _table(self, headers: tuple, rows: list[tuple]) -> None:
        cells = [tuple(str(c) for c in row) for row in rows]
        widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]
        self.stdout.write("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
        for row in cells:
            self.stdout.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _format(parser) -> None:
    parser.add_argument("--format", choices=["text", "json", "yaml"], default="text")


def _detail(workflow) -> dict:
    from workflows import queries
    from workflows.api import serializers as s

    queries.with_tasks(workflow)
    return json.loads(json.dumps(s.WorkflowDetailSerializer(workflow).data, default=str))


def explanation(workflow) -> dict:
    """What `workflow explain` prints: its status, and why it waits or was preempted (docs/admission.md)."""
    from workflows.api import serializers as s

    return json.loads(
        json.dumps(
            {
                "workflow_id": workflow.workflow_id,
                "status": workflow.status,
                "project": workflow.project.name if workflow.project else None,
                "node_pool": workflow.node_pool,
                "node_selector": _lead_selector(workflow),  # the template's and the node pool's (confinement)
                "priority": workflow.priority,
                "submitted_at": workflow.created_at,
                "admitted_at": workflow.admitted_at,
                "preemptible": workflow.preemptible,
                "queue": s.queue_of(workflow, ask_scheduler=True),
                "preemption": workflow.preemption or None,
            },
            default=str,
        )
    )


def _lead_selector(workflow) -> dict:
    task = workflow.tasks.order_by("-lead", "id").only("pod").first()
    return ((task.pod.get("spec") or {}).get("nodeSelector") or {}) if task else {}


def _read(name: str) -> tuple[str, str]:
    if name == "-":
        return sys.stdin.read(), "<stdin>"
    path = Path(name)
    try:
        return path.read_text(encoding="utf-8"), str(path)
    except FileNotFoundError:
        raise DocumentError(f"{name}: file not found", field="file", value=name) from None
    except (OSError, UnicodeDecodeError) as error:
        raise DocumentError(f"{name}: cannot read file: {error}", field="file", value=name) from None
