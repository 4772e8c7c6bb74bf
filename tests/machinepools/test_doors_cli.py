"""The MACHINE_POOL doors on the command line, run as a shell would (tests/clirun.py): `config
update|show|history|diff|rollback|delete MACHINE_POOL`, errors on one line naming the field (exit 1), and
`machinepool export NAME --format terraform|rosa`."""

from __future__ import annotations

import json

import pytest
from django.core.management import base

from clusters.models import MachinePool
from configs import revisions
from tests.clirun import run_as_cli
from tests.machinepools.conftest import OCM_ID, gpu_spot


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    apps = {"config": "pools", "machinepool": "pools"}
    return lambda name, *args: run_as_cli(capsys, apps[name], name, *args)


@pytest.fixture
def document(tmp_path):
    def write(body: dict) -> str:
        path = tmp_path / f"pool-{len(list(tmp_path.iterdir()))}.json"
        path.write_text(json.dumps(body))
        return str(path)

    return write


def test_update_show_history_rollback_delete(backends, cli, document):
    code, out, err = cli("config", "update", "MACHINE_POOL", "gpu-spot", "--file", document(gpu_spot()))
    assert (code, out, err) == (0, "MACHINE_POOL gpu-spot created (revision 1)\n", "")
    bigger = gpu_spot(autoscaling={"min_replicas": 0, "max_replicas": 6})
    code, out, _ = cli("config", "update", "machine_pool", "gpu-spot", "--file", document(bigger), "--description", "6")
    assert (code, out) == (0, "MACHINE_POOL gpu-spot updated (revision 2)\n")
    code, out, _ = cli("config", "show", "MACHINE_POOL", "gpu-spot")
    assert json.loads(out)["autoscaling"] == {"min_replicas": 0, "max_replicas": 6}
    code, out, _ = cli("config", "history", "MACHINE_POOL", "gpu-spot")
    assert [line.split()[2] for line in out.splitlines()[1:]] == ["2", "1"] and " 6" in out.splitlines()[1]
    code, out, _ = cli("config", "diff", "MACHINE_POOL", "gpu-spot", "1", "2")
    assert '-    "max_replicas": 3' in out and '+    "max_replicas": 6' in out
    code, out, _ = cli("config", "rollback", "MACHINE_POOL", "gpu-spot", "1")
    assert (code, out) == (0, "MACHINE_POOL gpu-spot rolled back to r1 (revision 3)\n")
    assert MachinePool.objects.get(name="gpu-spot").max_replicas == 3
    code, out, _ = cli("config", "delete", "MACHINE_POOL", "gpu-spot")
    assert (code, out) == (0, "MACHINE_POOL gpu-spot deleted (revision 4)\n")
    assert [r.deleted for r in revisions.history("MACHINE_POOL", "gpu-spot")] == [True, False, False, False]
    code, _, _ = cli("config", "rollback", "MACHINE_POOL", "gpu-spot", "3")
    assert code == 0 and MachinePool.objects.filter(name="gpu-spot").exists()  # a deleted pool comes back


def test_errors_are_one_line_naming_the_field(backends, cli, document):
    cases = [
        (gpu_spot(autoscaling={"min_replicas": 5, "max_replicas": 3}),
         "error: autoscaling.min_replicas: is above max_replicas (3); the pool scales between the two (value: 5)"),
        (gpu_spot(disk_size=64),
         "error: disk_size: must be a whole number of GiB from 128 to 16384 (ROSA's root volume limits) (value: 64)"),
        (gpu_spot(taints=[{"key": "gpu", "value": "true", "effect": "Never"}]),
         "error: taints[0].effect: a taint's effect is one of NoSchedule, PreferNoSchedule, NoExecute "
         "(value: 'Never')"),
        (gpu_spot(spot=False, max_price="0.2"),
         "error: max_price: a max price is for spot instances only: set spot to true, or leave max_price null "
         "(value: '0.2')"),
    ]  # fmt: skip
    for body, line in cases:
        code, out, err = cli("config", "update", "MACHINE_POOL", "gpu-spot", "--file", document(body))
        assert (code, out, err) == (1, "", line + "\n")
    code, _, err = cli("config", "update", "MACHINE_POOL", "gpu-spot", "--file", document(gpu_spot(instance_type="z9")))
    assert code == 1 and err.startswith("error: instance_type: unknown instance type; known: ")
    assert "g4dn.xlarge" in err and err.count("\n") == 1
    assert not MachinePool.objects.exists()


def test_export_terraform_and_rosa(backends, cli, document):
    cli("config", "update", "MACHINE_POOL", "gpu-spot", "--file", document(gpu_spot()))
    code, out, err = cli("machinepool", "export", "gpu-spot", "--format", "rosa")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == f"rosa create machinepool --cluster={OCM_ID} \\"
    assert "--taints=nvidia.com/gpu=true:NoSchedule,spot=true:PreferNoSchedule" in out
    code, out, err = cli("machinepool", "export", "gpu-spot")  # terraform by default
    assert (code, err) == (0, "")
    assert f'cluster_id = "{OCM_ID}"' in out and "create_gpu_spot_pool        = true" in out
    fixed = {"backend": "plain", "instance_type": "m5.2xlarge", "replicas": 2, "disk_size": 500,
             "taints": [{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}]}  # fmt: skip
    cli("config", "update", "MACHINE_POOL", "batch-workers", "--file", document(fixed))
    code, out, err = cli("machinepool", "export", "batch-workers", "--format", "terraform")
    assert code == 0 and "cluster_id = module.rosa_cluster.cluster_id" in out
    assert "additional_pool_min_replicas  = 2" in out and "additional_pool_max_replicas  = 2" in out
    assert err.splitlines() == [
        "warning: batch-workers: not expressible in terraform: replicas 2 (fixed): the module always autoscales, "
        "so min = max = 2",
        "warning: batch-workers: not expressible in terraform: disk size 500 GiB: the module has no "
        "additional_pool_disk_size, so the pool gets ROSA's default root disk (300 GiB)",
    ]
    code, out, err = cli("machinepool", "export", "batch-workers", "--format", "rosa")
    assert "--cluster=plain" in out and "--replicas=2" in out and "--disk-size=500GiB" in out
    code, out, err = cli("machinepool", "export", "ghost")
    assert (code, out, err) == (1, "", "error: name: unknown machine pool (value: 'ghost')\n")
    code, _, err = cli("machinepool", "export", "gpu-spot", "--format", "pulumi")
    assert code == 2 and "invalid choice: 'pulumi'" in err
