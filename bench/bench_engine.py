"""Engine benchmarks: template merge at config save (beside OSMO's merge), resolve + validate one task,
the Pod schema validation's share of a resolve, and node rules over a 500 / 5,000 node platform.

Scenario (from the issue): 3 templates, 2 containers, 12 admin variables, 4 static rules (plus OSMO's 4
node rules); issue #17's pool adds a 4th template (a sidecar and a label). Node fleets have few distinct
shapes, as real ones do.
"""

from __future__ import annotations

import copy

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
from pools.engine.merge import merge_templates
from pools.engine.platform import CompiledPlatform, PlatformConfig
from pools.engine.resolve import _build_pod, _inputs, _schema_violations
from pools.engine.schema import _VALID_PARTS, validate_pod
from pools.engine.variables import build_variables, variable_values

_SHAPES = [
    ("96", "8", "1024Gi", "3Ti"),
    ("64", "4", "512Gi", "2Ti"),
    ("32", "0", "256Gi", "1Ti"),
    ("128", "8", "2Ti", "7Ti"),
]


_SIDECAR = {
    "metadata": {"labels": {"tier": "training"}},
    "spec": {
        "containers": [
            {
                "name": "metrics",
                "image": "nvcr.io/nvidia/dcgm-exporter:3.3",
                "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
            }
        ]
    },
}


def scenario(*, four: bool = False, wide: int = 0) -> tuple[CompiledPlatform, TaskInput, WorkflowContext]:
    """The pool of the issue; `four` adds the 4th template (a metrics sidecar and a label), `wide` that many
    more containers (wide_templates)."""
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
            *([("sidecar", copy.deepcopy(_SIDECAR))] if four else []),
            *(wide_templates(wide) if wide else []),
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


def osmo_style_merge(ordered: list[tuple[str, dict]]) -> dict:
    """What OSMO does at config save, for the comparison row: deep-copy each template, then update a dict in
    place (dicts recurse, lists of named items merge by name, the rest replaces). No provenance, no `$patch`."""

    def update(base: dict, overlay: dict) -> dict:
        for key, value in overlay.items():
            if isinstance(value, dict):
                current = base.get(key)
                base[key] = update(current if isinstance(current, dict) else {}, value)
            elif isinstance(value, list) and isinstance(base.get(key), list):
                base[key] = by_name(base[key], value)
            else:
                base[key] = value
        return base

    def by_name(base: list, overlay: list) -> list:
        index = {item["name"]: i for i, item in enumerate(base) if isinstance(item, dict) and "name" in item}
        extra = []
        for item in overlay:
            if isinstance(item, dict) and item.get("name") in index:
                base[index[item["name"]]] = update(base[index[item["name"]]], item)
            else:
                extra.append(item)
        base.extend(extra)
        return base

    merged: dict = {}
    for _, template in ordered:
        merged = update(merged, copy.deepcopy(template))
    return merged


def wide_templates(containers: int = 50) -> list[tuple[str, dict]]:
    """4 templates over `containers` named containers: base, resources, env, and a platform override."""

    def spec(make) -> dict:
        return {"spec": {"containers": [make(i) for i in range(containers)]}}

    return [
        ("base", spec(lambda i: {"name": f"c{i}", "image": f"registry.example/c{i}:1"})),
        ("resources", spec(lambda i: {"name": f"c{i}", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}})),
        ("env", spec(lambda i: {"name": f"c{i}", "env": [{"name": "TEAM", "value": "{{TEAM}}"}]})),
        ("override", spec(lambda i: {"name": f"c{i}", "resources": {"requests": {"cpu": "500m"}}})),
    ]


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
    rows = _merge_rows()
    rows.append(
        measure(
            "resolve+validate 1 task",
            lambda: resolve(platform, task, ctx),
            runs=500,
            target="≤ 0.5 ms, p99 ≤ 1 ms",
            note="3 templates, 2 containers, 12 variables, 4 static rules, schema",
        )
    )
    four, task4, ctx4 = scenario(four=True)
    assert resolve(four, task4, ctx4).ok
    rows.append(
        measure(
            "resolve+validate 1 task, 4 templates",
            lambda: resolve(four, task4, ctx4),
            runs=500,
            target="≤ 0.5 ms, p99 ≤ 1 ms",
            note="issue #17's pool: 4 templates, 3 containers, 12 variables, 8 rules, schema",
        )
    )
    rows.append(
        measure(
            "resolve + provenance (preview)",
            lambda: resolve(four, task4, ctx4).provenance,
            runs=500,
            note="what a preview or dry run pays: provenance is built on first read",
        )
    )
    rows.extend(_schema_share_rows(four, task4, ctx4))
    wide, task51, ctx51 = scenario(four=True, wide=48)
    assert resolve(wide, task51, ctx51).ok
    rows.extend(_schema_share_rows(wide, task51, ctx51))
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


def _merge_rows() -> list[Row]:
    rows = []
    pool = scenario(four=True)[0].config.templates
    for label, ordered in (("4 templates", pool), ("4 templates x 50 containers", wide_templates(50))):
        assert merge_templates(ordered).body == osmo_style_merge(ordered)
        ours = measure(f"merge {label} (config save)", lambda o=ordered: merge_templates(o), runs=300)
        osmo = measure(f"merge {label}, OSMO's algorithm", lambda o=ordered: osmo_style_merge(o), runs=300)
        sources = measure(f"merge {label} + leaf sources", lambda o=ordered: merge_templates(o).sources, runs=300)
        ours.target = "≤ OSMO's"
        ours.note = (
            f"value + origin tree, both stored as they are (to_json); "
            f"{ours.median_s / osmo.median_s:.2f}x OSMO's median"
        )
        osmo.note = "deepcopy + in-place update, no provenance (the comparison)"
        sources.note = (
            f"with {{leaf path: template}} built (what a preview reads, not config save); "
            f"{sources.median_s / osmo.median_s:.2f}x OSMO's median"
        )
        rows += [ours, osmo, sources]
    return rows


def _schema_share_rows(platform: CompiledPlatform, task: TaskInput, ctx: WorkflowContext) -> list[Row]:
    """Schema validation of the resolved pod, as resolve runs it (render keys for the containers the template
    rendered, computed in the measured step), beside the resolve that includes it (its share in the note)."""
    container, _, values = _inputs(platform, task, ctx)
    built = _build_pod(platform, task, ctx, container, values)
    pod = built.pod
    count = len(pod["spec"]["containers"])
    whole = measure(f"resolve, {count} containers (for the share)", lambda: resolve(platform, task, ctx), runs=300)
    schema = measure(
        f"Pod schema validation, {count} containers",
        lambda: _schema_violations(platform, built, values),
        runs=300,
        target="≤ 10% of resolve",
    )
    schema.note = f"{schema.median_s / whole.median_s:.0%} of the resolve median ({count} containers)"
    schema.note += "; parts already seen valid are remembered (the same task repeated)"
    plain = measure(f"Pod schema validation, {count} containers, no render keys", lambda: validate_pod(pod), runs=300)
    plain.note = f"{plain.median_s / whole.median_s:.0%} of the resolve median: every container serialized to key it"

    def cold() -> None:
        _VALID_PARTS.clear()
        validate_pod(pod)

    first = measure(f"Pod schema validation, {count} containers, first sight", cold, runs=300)
    first.note = f"{first.median_s / whole.median_s:.0%} of the resolve median; nothing remembered"
    return [whole, schema, plain, first]
