"""Engine benchmarks: resolve + validate one task, and node rules over a 500 / 5,000 node platform.

Scenario (from the issue): 3 templates, 2 containers, 12 admin variables, 4 static rules (plus OSMO's 4
node rules). Node fleets have few distinct shapes, as real ones do.
"""

from __future__ import annotations

from bench.harness import Row, measure
from pools.engine import (
    NodeCapacity,
    TaskInput,
    WorkflowContext,
    compile_platform,
    default_templates,
    default_validations,
    resolve,
)
from pools.engine.platform import CompiledPlatform, PlatformConfig
from pools.engine.variables import build_variables, variable_values

_SHAPES = [
    ("96", "8", "1024Gi", "3Ti"),
    ("64", "4", "512Gi", "2Ti"),
    ("32", "0", "256Gi", "1Ti"),
    ("128", "8", "2Ti", "7Ti"),
]


def scenario() -> tuple[CompiledPlatform, TaskInput, WorkflowContext]:
    templates = default_templates()
    gpu_override = {
        "metadata": {"annotations": {"team": "{{TEAM}}", "cost-center": "{{COST_CENTER}}"}},
        "spec": {
            "nodeSelector": {"nvidia.com/gpu.product": "{{GPU_PRODUCT}}"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "priorityClassName": "{{PRIORITY_CLASS}}",
            "terminationGracePeriodSeconds": "{{GRACE_SECONDS}}",
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "{{SHM_SIZE}}"}}],
            "containers": [
                {
                    "name": "{{USER_CONTAINER_NAME}}",
                    "env": [
                        {"name": "NCCL_DEBUG", "value": "{{NCCL_DEBUG}}"},
                        {"name": "WORKFLOW", "value": "{{WF_ID}}-{{WF_TASK_NAME}}"},
                    ],
                    "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
                }
            ],
        },
    }
    config = PlatformConfig(
        pool="research",
        platform="a100",
        templates=[
            ("default_ctrl", templates["default_ctrl"]),
            ("default_user", templates["default_user"]),
            ("a100_override", gpu_override),
        ],
        rule_sets=list(default_validations().items()),
        pool_variables={
            "USER_CPU": 1,
            "USER_GPU": 0,
            "USER_MEMORY": "1Gi",
            "USER_STORAGE": "10Gi",
            "TEAM": "vision",
            "COST_CENTER": "cc-1234",
            "PRIORITY_CLASS": "normal",
            "NCCL_DEBUG": "WARN",
        },
        platform_variables={
            "GPU_PRODUCT": "NVIDIA-A100-SXM4-80GB",
            "GRACE_SECONDS": 60,
            "SHM_SIZE": "16Gi",
            "USER_GPU": 1,
        },
    )
    task = TaskInput(
        name="train",
        image="nvcr.io/nvidia/pytorch:24.01-py3",
        command=["torchrun"],
        args=["--nproc-per-node=8", "train.py"],
        environment={"EPOCHS": "10"},
        resources={"cpu": 16, "gpu": 8, "memory": "200Gi", "storage": "100Gi"},
    )
    return compile_platform(config), task, WorkflowContext(workflow_id="train-42", submitted_by="alice")


def fleet(size: int) -> list[NodeCapacity]:
    return [NodeCapacity(f"node-{i:05d}", *_SHAPES[i % len(_SHAPES)]) for i in range(size)]


def run() -> list[Row]:
    platform, task, ctx = scenario()
    assert resolve(platform, task, ctx).ok
    values = variable_values(
        build_variables(
            pool_variables=platform.config.pool_variables,
            platform_variables=platform.config.platform_variables,
            resources=task.resources,
        )
    )
    rows = [
        measure(
            "resolve+validate 1 task",
            lambda: resolve(platform, task, ctx),
            runs=500,
            target="≤ 1 ms",
            note="3 templates, 2 containers, 12 variables, 4 static rules, schema",
        )
    ]
    for size, target in ((500, ""), (5_000, "≤ 10 ms")):
        nodes = fleet(size)
        assert platform.rules.check_nodes(values, nodes).passed
        rows.append(
            measure(
                f"node rules over {size:,} nodes",
                lambda n=nodes: platform.rules.check_nodes(values, n),
                runs=100,
                target=target,
                note=f"4 node rules, {len(_SHAPES)} node shapes",
            )
        )
    return rows
