"""The rows of the fleet's history (bench/fleet_history.py): distributions, a resolved Pod, COPY buffers."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

DAY = 86400.0

# --- the history's distributions --------------------------------------------------------------------------
FINISHED = (  # status, weight
    ("COMPLETED", 72),
    ("FAILED", 12),
    ("CANCELLED", 8),
    ("FAILED_PREEMPTED", 2),
    ("FAILED_EXEC_TIMEOUT", 2),
    ("FAILED_QUEUE_TIMEOUT", 2),
    ("FAILED_BACKEND_ERROR", 1),
    ("FAILED_SUBMISSION", 1),
)
LIVE = (("RUNNING", 50), ("QUEUED", 40), ("WAITING", 5), ("PENDING", 5))
LIVE_SHARE = 0.005  # of the workflows, the newest ones: still queued or running
TASK_COUNTS = (1, 1, 1, 1, 1, 2, 3, 4, 8, 8)  # three tasks a workflow on average
GPUS_PER_TASK = {"h100": (1, 2, 4, 8, 8), "a100": (1, 2, 4, 8), "gb200": (1, 2, 4), "l40s": (1, 1, 2, 4)}
GPUS_PER_NODE = {"h100": 8, "a100": 8, "gb200": 4, "l40s": 4, "t4-spot": 1, "cpu": 0}
PRICE_PER_NODE = {"h100": 98.32, "a100": 40.97, "gb200": 120.0, "l40s": 10.49, "t4-spot": 0.16, "cpu": 1.54}
NAMES = [
    f"{a}-{b}"
    for a in ("train", "eval", "sweep", "finetune", "infer", "sim", "prep", "bench")
    for b in (
        "resnet",
        "llama",
        "vit",
        "bert",
        "gpt",
        "diffusion",
        "rl-arm",
        "nav",
        "grasp",
        "asr",
        "ocr",
        "detr",
        "sam",
        "whisper",
        "t5",
        "clip",
        "mae",
        "dino",
        "unet",
        "ppo",
        "sac",
        "dqn",
        "mpc",
        "slam",
        "nerf",
    )
]
RAW_DAYS = 90  # USAGE_RAW_RETENTION_DAYS: older attempts and workflow records are gone, their rollups stay


def ts(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(sep=" ")


def pod_template(pool: str, platform: str, node_pool: str, gpus_label: str) -> str:
    """A resolved Pod as the engine writes it (about 2 KB of JSON); placeholders filled per task."""
    requests = {"cpu": "__CPU__", "memory": "__MEM__", "ephemeral-storage": "100Gi"}
    if gpus_label:
        requests["nvidia.com/gpu"] = "__GPU__"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "__POD__",
            "namespace": "osmo-workflows",
            "labels": {
                "pool-portal/workflow": "__WF__",
                "pool-portal/task": "__TASK__",
                "pool-portal/pool": pool,
                "pool-portal/platform": platform,
                "pool-portal/node-pool": node_pool,
                "pool-portal/user": "__USER__",
            },
            "annotations": {"pool-portal/workflow-uuid": "__UUID__", "pool-portal/retry": "0"},
        },
        "spec": {
            "restartPolicy": "Never",
            "schedulerName": "default-scheduler",
            "nodeSelector": {"hive.openshift.io/machine-pool": platform, "kubernetes.io/arch": "amd64"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
            if gpus_label
            else [],
            "containers": [
                {
                    "name": "__TASK__",
                    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                    "command": ["bash", "-c"],
                    "args": ["python -m train --config /data/config.yaml --epochs 20 --checkpoint /data/ckpt"],
                    "env": [
                        {"name": "OSMO_WORKFLOW_ID", "value": "__WF__"},
                        {"name": "OSMO_TASK_NAME", "value": "__TASK__"},
                        {"name": "OSMO_POOL", "value": pool},
                        {"name": "OSMO_PLATFORM", "value": platform},
                        {"name": "NCCL_DEBUG", "value": "WARN"},
                        {"name": "PYTHONUNBUFFERED", "value": "1"},
                    ],
                    "resources": {"requests": requests, "limits": dict(requests)},
                    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}, {"name": "data", "mountPath": "/data"}],
                },
                {
                    "name": "osmo-ctrl",
                    "image": "registry.example/osmo/ctrl:6.2.0",
                    "args": ["--workflow", "__WF__", "--task", "__TASK__"],
                    "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
                },
            ],
            "volumes": [
                {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}},
                {"name": "data", "emptyDir": {}},
            ],
        },
    }
    return json.dumps(pod, separators=(",", ":"))


class CopyRows:
    """Text buffers of COPY rows per table, flushed together."""

    COLUMNS = {
        "workflows_workflow": "id, workflow_id, uuid, name, priority, status, spec, labels, exec_timeout_seconds, "
        "queue_timeout_seconds, warnings, error, created_at, started_at, finished_at, pool_id, submitted_by_id, "
        "project_id, admitted_at, node_pool, preemptible, preemption, queue_reason, requests, cancelled_by, "
        "submit_key, credential_secrets",
        "workflows_workflowpart": "id, node_pool, tasks, requests, admitted_at, preemptible, workflow_id",
        "workflows_task": "id, name, group_name, lead, platform, pod, pod_name, namespace, exit_actions, status, "
        "retry_id, node, pod_uid, exit_code, error, created_at, pod_created_at, started_at, finished_at, "
        "workflow_id, ignore_non_lead_status, exit_message, exit_reason, interruptions, node_pool",
        "workflows_taskevent": "at, kind, message, task_id, recorded_at",
        "usage_taskattempt": "task_pk, attempt, workflow_id, task, pod, project, department, pool, platform, "
        "node_pool, backend, node, instance_type, capacity_type, gpu, cpu_millis, memory_bytes, started_at, "
        "ended_at, outcome, hourly_cost_micros, price_source, recorded_at, rolled_up",
        "usage_workflowrecord": "workflow_id, project, department, pool, node_pool, backend, priority, requests, "
        "parts, submitted_at, admitted_at, running_at, finished_at, status, preemptible, preemptions, recorded_at",
    }

    def __init__(self) -> None:
        self.buffers = {table: io.StringIO() for table in self.COLUMNS}

    def row(self, table: str, *values) -> None:
        self.buffers[table].write("\t".join(values))
        self.buffers[table].write("\n")

    def flush(self, cursor) -> None:
        for table, buffer in self.buffers.items():
            data = buffer.getvalue()
            if data:
                with cursor.copy(f"COPY {table} ({self.COLUMNS[table]}) FROM STDIN") as copy:
                    copy.write(data)
            self.buffers[table] = io.StringIO()


N = "\\N"


def end_event(status: str) -> tuple[str, str]:
    return {
        "COMPLETED": ("EXITED", "exit code 0: COMPLETED (cluster: container terminated)"),
        "FAILED": ("EXITED", "exit code 1: FAILED (Error: container terminated)"),
        "FAILED_EXEC_TIMEOUT": ("EXEC_TIMEOUT", "ran longer than its exec timeout"),
        "FAILED_PREEMPTED": ("PREEMPTED", "preempted for a project within its deserved quota (exit code 3008)"),
        "CANCELLED": ("CANCELLED", "cancelled by its submitter"),
    }[status]


OUTCOME = {
    "COMPLETED": "completed",
    "FAILED": "failed",
    "FAILED_EXEC_TIMEOUT": "failed",
    "FAILED_PREEMPTED": "preempted",
    "CANCELLED": "cancelled",
}
