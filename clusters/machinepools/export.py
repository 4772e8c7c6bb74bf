"""A machine pool as the pipelines that provision ROSA write it (pure: MachinePoolSpecs in, text out).

- `terraform(spec, cluster_id)`: one `module` block of the seed's ROSA machine-pools module (seed 004,
  clusters.machinepools.rosa_module), with its exact variable names. A spot pool maps to the GPU spot pool
  (`gpu_spot_pool_*`, `gpu_spot_max_price`), any other pool to the additional pool (`additional_pool_*`).
- `terraform_calls([(spec, cluster_id), ...])`: several pools, as few module calls as the module allows: one
  call makes at most one additional pool and one GPU spot pool, so an on-demand and a spot pool of the same
  cluster share a call (the seed's "Both Pools" example), and the others get a call each.
- `rosa(spec, cluster)`: the `rosa create machinepool` command line (the rosa CLI's flags, zones, subnet,
  additional security groups and tags included).

What a format cannot express is said, never dropped silently: `Export.notes`, written as comments. A pool
exported without a note reads back the same (clusters.machinepools.terraform; tests/machinepools, round trip).
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from clusters.machinepools import rosa_module as module
from clusters.machinepools.spec import MachinePoolSpec, Taint

MODULE_SOURCE = module.SOURCE
CLUSTER_EXPRESSION = module.CLUSTER_EXPRESSION
MODULE_GPU_SPOT_TAINTS = module.GPU_SPOT_TAINTS
ROSA_DEFAULT_DISK_GIB = module.ROSA_DEFAULT_DISK_GIB
ROSA_ONLY = ("availability_zones", "subnets", "security_groups", "aws_tags")
KARPENTER_ONLY = ("requirements", "limits", "disruption")


@dataclass(frozen=True)
class Export:
    text: str
    notes: tuple[str, ...] = ()


def terraform(spec: MachinePoolSpec, cluster_id: str = "") -> Export:
    additional, gpu_spot = (None, spec) if spec.spot else (spec, None)
    return _module_call(additional, gpu_spot, cluster_id, named_notes=False)


def terraform_calls(pools: list[tuple[MachinePoolSpec, str]]) -> Export:
    """The pools (each with its cluster's OCM id, "" for none) as module calls, in name order: per cluster,
    the i-th on-demand pool shares a call with the i-th spot pool. Notes name their pool."""
    by_cluster: dict[str, tuple[list, list]] = {}
    for spec, cluster_id in sorted(pools, key=lambda pool: pool[0].name):
        by_cluster.setdefault(cluster_id, ([], []))[1 if spec.spot else 0].append(spec)
    calls = []
    for cluster_id, (additional, gpu_spot) in by_cluster.items():
        for index in range(max(len(additional), len(gpu_spot))):
            pair = (_at(additional, index), _at(gpu_spot, index))
            calls.append(_module_call(*pair, cluster_id, named_notes=True))
    return Export("\n".join(call.text for call in calls), tuple(note for call in calls for note in call.notes))


def _at(specs: list, index: int):
    return specs[index] if index < len(specs) else None


def _module_call(additional, gpu_spot, cluster_id: str, *, named_notes: bool) -> Export:
    """One call making `additional` (on-demand) and `gpu_spot` (spot), either of which may be None; its notes
    begin with their pool's name when `named_notes`."""
    specs = [spec for spec in (additional, gpu_spot) if spec is not None]
    names = [spec.name for spec in specs]
    scalars, blocks, notes = [], [], []
    for spec in specs:
        own_scalars, own_blocks, own_notes = _half(spec)
        scalars += own_scalars
        blocks += own_blocks
        notes += [f"{spec.name}: {note}" if named_notes else note for note in own_notes]
    cluster = _hcl(cluster_id) if cluster_id else CLUSTER_EXPRESSION
    label = "machine_pools_" + "_".join(names).replace("-", "_")
    lines = [f"# machine pool{'s' if len(specs) > 1 else ''} {' and '.join(names)}, exported by the portal"]
    lines += [f"# not expressible: {note}" for note in notes]
    lines += [f'module "{label}" {{', f"  source = {_hcl(MODULE_SOURCE)}", "", f"  cluster_id = {cluster}"]
    for group in scalars:
        width = max(len(key) for key, _ in group)
        lines += ["", *(f"  {key.ljust(width)} = {value}" for key, value in group)]
    lines += [line for block in blocks if block for line in ["", *block]]
    lines.append("}")
    return Export("\n".join(lines) + "\n", tuple(notes))


def _half(spec: MachinePoolSpec) -> tuple[list, list, list[str]]:
    """One pool's variables: ([its scalars], [its map and list blocks], [what the module cannot express])."""
    half = module.GPU_SPOT if spec.spot else module.ADDITIONAL
    low, high, notes = _scaling(spec)
    scalars = [
        (half.create, "true"),
        (half.variable("name"), _hcl(spec.name)),
        (half.variable("instance_type"), _hcl(spec.instance_type)),
        (half.variable("min_replicas"), str(low)),
        (half.variable("max_replicas"), str(high)),
    ]
    blocks = [_map(half.variable("labels"), spec.labels)]
    if spec.spot:
        scalars.append((half.variable("disk_size"), str(spec.disk_size_gib)))
        scalars.append((module.SPOT_MAX_PRICE, _hcl("" if spec.max_price is None else _price(spec.max_price))))
        notes += _spot_taint_notes(spec) + _spot_label_notes(spec)
    else:
        blocks.append(_taints(half.variable("taints"), spec.taints))
        if spec.disk_size_gib != ROSA_DEFAULT_DISK_GIB:
            notes.append(
                f"disk size {spec.disk_size_gib} GiB: the module has no additional_pool_disk_size, so the pool "
                f"gets ROSA's default root disk ({ROSA_DEFAULT_DISK_GIB} GiB)"
            )
    notes += _unexported(spec, "the module has no variable for it", ROSA_ONLY + KARPENTER_ONLY)
    return [scalars], blocks, notes


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
    if len(spec.availability_zones) == 1:
        flags.append(f"--availability-zone={spec.availability_zones[0]}")
    elif spec.availability_zones:
        flags.append("--multi-availability-zone")
    if spec.subnets:
        flags.append(f"--subnet={spec.subnets[0]}")
    if spec.security_groups:
        flags.append(f"--additional-security-group-ids={','.join(spec.security_groups)}")
    if spec.aws_tags:
        flags.append("--tags=" + shlex.quote(",".join(f"{k}:{v}" for k, v in spec.aws_tags.items())))
    notes = _unexported(spec, "Karpenter's, not a ROSA machine pool's", KARPENTER_ONLY)
    lines = [*(f"# not expressible: {n}" for n in notes), "rosa create machinepool " + " \\\n  ".join(flags)]
    return Export("\n".join(lines) + "\n", tuple(notes))


def _unexported(spec: MachinePoolSpec, why: str, names: tuple[str, ...]) -> list[str]:
    """A note for each of `names` the spec sets that the format cannot carry."""
    return [f"{name} {_shown(getattr(spec, name))}: {why}" for name in names if getattr(spec, name)]


def _shown(value) -> str:
    return json.dumps(list(value) if isinstance(value, tuple) else value, sort_keys=True)


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


def _spot_label_notes(spec: MachinePoolSpec) -> list[str]:
    missing = {k: v for k, v in module.GPU_SPOT_LABELS.items() if k not in spec.labels}
    if not missing:
        return []
    shown = ", ".join(f"{k}={v}" for k, v in missing.items())
    return [f"labels: the module puts {shown} on its GPU spot pool, which this pool has not"]


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
