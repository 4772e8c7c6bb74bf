"""A machine pool as the pipelines that provision ROSA write it (pure: a MachinePoolSpec in, text out).

- `terraform(spec, cluster_id)`: one `module` block of the seed's ROSA machine-pools module (seed 004), with
  its exact variable names. The module makes at most one additional pool (`additional_pool_*`) and one GPU
  spot pool (`gpu_spot_pool_*`, `gpu_spot_max_price`) per call: a spot pool maps to the latter, any other
  pool to the former, and each exported pool gets a module block of its own, so two spot pools (which one
  call cannot hold) are two blocks.
- `rosa(spec, cluster)`: the `rosa create machinepool` command line (the rosa CLI's flags).

What a format cannot express is said, never dropped silently: `Export.notes`, written as comments.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from clusters.machinepools.spec import MachinePoolSpec, Taint

MODULE_SOURCE = "./modules/machine-pools"
# The seed's own expression for the cluster when the backend has no OCM cluster id.
CLUSTER_EXPRESSION = "module.rosa_cluster.cluster_id"
# The taints the module puts on its GPU spot pool itself (seed 004, "Default GPU Pool Taints").
MODULE_GPU_SPOT_TAINTS = (Taint("nvidia.com/gpu", "true", "NoSchedule"), Taint("spot", "true", "PreferNoSchedule"))
ROSA_DEFAULT_DISK_GIB = 300  # what a pool gets when the module passes no disk size


@dataclass(frozen=True)
class Export:
    text: str
    notes: tuple[str, ...] = ()


def terraform(spec: MachinePoolSpec, cluster_id: str = "") -> Export:
    prefix = "gpu_spot_pool" if spec.spot else "additional_pool"
    low, high, notes = _scaling(spec)
    cluster = _hcl(cluster_id) if cluster_id else CLUSTER_EXPRESSION
    scalars = [
        (f"create_{'gpu_spot_pool' if spec.spot else 'additional_pool'}", "true"),
        (f"{prefix}_name", _hcl(spec.name)),
        (f"{prefix}_instance_type", _hcl(spec.instance_type)),
        (f"{prefix}_min_replicas", str(low)),
        (f"{prefix}_max_replicas", str(high)),
    ]
    blocks = [_map(f"{prefix}_labels", spec.labels)]
    if spec.spot:
        scalars.append(("gpu_spot_pool_disk_size", str(spec.disk_size_gib)))
        scalars.append(("gpu_spot_max_price", _hcl("" if spec.max_price is None else _price(spec.max_price))))
        notes += _spot_taint_notes(spec)
    else:
        blocks.append(_taints("additional_pool_taints", spec.taints))
        if spec.disk_size_gib != ROSA_DEFAULT_DISK_GIB:
            notes.append(
                f"disk size {spec.disk_size_gib} GiB: the module has no additional_pool_disk_size, so the pool "
                f"gets ROSA's default root disk ({ROSA_DEFAULT_DISK_GIB} GiB)"
            )
    lines = [f"# machine pool {spec.name}, exported by the portal", *(f"# not expressible: {n}" for n in notes)]
    lines += [f'module "machine_pools_{spec.name.replace("-", "_")}" {{', f"  source = {_hcl(MODULE_SOURCE)}", ""]
    lines += [f"  cluster_id = {cluster}", ""]
    width = max(len(key) for key, _ in scalars)
    lines += [f"  {key.ljust(width)} = {value}" for key, value in scalars]
    lines += [line for block in blocks if block for line in ["", *block]]
    lines.append("}")
    return Export("\n".join(lines) + "\n", tuple(notes))


def rosa(spec: MachinePoolSpec, cluster: str) -> Export:
    flags = [f"--cluster={shlex.quote(cluster)}", f"--name={spec.name}", f"--instance-type={spec.instance_type}"]
    if spec.autoscaling:
        flags += ["--enable-autoscaling", f"--min-replicas={spec.min_replicas}", f"--max-replicas={spec.max_replicas}"]
    else:
        flags.append(f"--replicas={spec.replicas}")
    if spec.labels:
        flags.append("--labels=" + shlex.quote(",".join(f"{k}={v}" for k, v in spec.labels.items())))
    if spec.taints:
        flags.append("--taints=" + shlex.quote(",".join(f"{t.key}={t.value}:{t.effect}" for t in spec.taints)))
    if spec.spot:
        flags.append("--use-spot-instances")
        if spec.max_price is not None:
            flags.append(f"--spot-max-price={_price(spec.max_price)}")
    flags.append(f"--disk-size={spec.disk_size_gib}GiB")
    return Export("rosa create machinepool " + " \\\n  ".join(flags) + "\n")


def _scaling(spec: MachinePoolSpec) -> tuple[int, int, list[str]]:
    if spec.autoscaling:
        return spec.min_replicas, spec.max_replicas, []
    note = f"replicas {spec.replicas} (fixed): the module always autoscales, so min = max = {spec.replicas}"
    return spec.replicas, spec.replicas, [note]


def _spot_taint_notes(spec: MachinePoolSpec) -> list[str]:
    if tuple(spec.taints) == MODULE_GPU_SPOT_TAINTS:
        return []
    module = ", ".join(_taint_text(t) for t in MODULE_GPU_SPOT_TAINTS)
    own = ", ".join(_taint_text(t) for t in spec.taints) or "none"
    return [f"taints: the module gives its GPU spot pool its own ({module}), not this pool's ({own})"]


def _taint_text(taint: Taint) -> str:
    return f"{taint.key}={taint.value}:{taint.effect}"


def _map(name: str, values: dict) -> list[str]:
    if not values:
        return [f"  {name} = {{}}"]
    width = max(len(_hcl(key)) for key in values)
    return [f"  {name} = {{", *(f"    {_hcl(k).ljust(width)} = {_hcl(v)}" for k, v in values.items()), "  }"]


def _taints(name: str, taints) -> list[str]:
    if not taints:
        return [f"  {name} = []"]
    lines = [f"  {name} = ["]
    for taint in taints:
        lines += [
            "    {",
            f"      key    = {_hcl(taint.key)}",
            f"      value  = {_hcl(taint.value)}",
            f"      effect = {_hcl(taint.effect)}",
            "    },",
        ]
    return [*lines, "  ]"]


def _hcl(text: str) -> str:
    """An HCL string literal (JSON's escapes are HCL's; `${` would start an interpolation)."""
    return json.dumps(text).replace("${", "$${").replace("%{", "%%{")


def _price(price) -> str:
    return format(price.normalize(), "f")
