"""`machinepool import --terraform FILE`: the seed's three usage examples (and its `schedule_type` taint) become
machine pools through the config store, with the module's defaults and the GPU pool's implied taints and label
said as notes; a dry run writes nothing; bad input is refused naming file, line, attribute, value and reason,
with nothing written. Run as a shell would (tests/clirun.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import base

from clusters.models import MachinePool
from configs import store
from configs.models import Revision
from tests.clirun import run_as_cli

EXAMPLES = Path(__file__).parent / "terraform"
GPU_TAINTS = [
    {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
]


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    return lambda *args: run_as_cli(capsys, "pools", "machinepool", *args)


@pytest.fixture
def terraform(tmp_path):
    def write(text: str, name: str = "main.tf") -> str:
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def imported(name: str) -> dict:
    body = store.show("MACHINE_POOL", name)
    return {k: v for k, v in body.items() if k != "description"}


def written() -> tuple[int, int]:
    return MachinePool.objects.count(), Revision.objects.count()


def test_the_basic_additional_pool(backends, cli):
    code, out, err = cli("import", "--terraform", str(EXAMPLES / "basic_additional_pool.tf"), "--backend", "rosa-a")
    assert (code, err) == (0, "")
    assert out == "MACHINE_POOL batch-workers created (revision 1) on backend rosa-a\n"
    assert imported("batch-workers") == {
        "backend": "rosa-a",
        "instance_type": "m5.2xlarge",
        "replicas": None,
        "autoscaling": {"min_replicas": 2, "max_replicas": 10},
        "labels": {"team": "data-engineering", "workload-type": "batch"},
        "taints": [{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}],
        "spot": False,
        "max_price": None,
        "disk_size": 300,
    }
    revision = Revision.objects.get(config_type="MACHINE_POOL", name="batch-workers")
    assert revision.change.description == "machinepool import --terraform basic_additional_pool.tf"


def test_the_gpu_spot_pool_gets_the_modules_taints_and_label(backends, cli):
    code, out, err = cli("import", "--terraform", str(EXAMPLES / "gpu_spot_pool.tf"), "--backend", "rosa-a")
    assert code == 0 and out == "MACHINE_POOL ml-training created (revision 1) on backend rosa-a\n"
    assert err.splitlines() == [
        "note: ml-training: label node-type=gpu: the module puts it on its GPU spot pool (its ML-training Job "
        "selects it)",
        "note: ml-training: taints nvidia.com/gpu=true:NoSchedule, spot=true:PreferNoSchedule: the module puts "
        "them on its GPU spot pool",
    ]
    assert imported("ml-training") == {
        "backend": "rosa-a",
        "instance_type": "p3.2xlarge",
        "replicas": None,
        "autoscaling": {"min_replicas": 0, "max_replicas": 5},
        "labels": {"ml-framework": "pytorch", "node-type": "gpu"},
        "taints": GPU_TAINTS,
        "spot": True,
        "max_price": None,
        "disk_size": 500,
    }


def test_both_pools_with_the_modules_defaults_said(backends, cli):
    code, out, err = cli("import", "--terraform", str(EXAMPLES / "both_pools.tf"), "--backend", "rosa-a")
    assert code == 0
    assert out.splitlines() == [
        "MACHINE_POOL compute created (revision 1) on backend rosa-a",
        "MACHINE_POOL gpu-spot created (revision 1) on backend rosa-a",
    ]
    assert err.splitlines() == [
        "note: gpu-spot: gpu_spot_pool_name not given: gpu-spot (the portal's GPU spot preset's name; the module's "
        "table gives none)",
        "note: gpu-spot: gpu_spot_pool_min_replicas not given: 0 (the module's default)",
        "note: gpu-spot: gpu_spot_pool_disk_size not given: 300 (GiB, ROSA's default root disk; the module's table "
        "gives none)",
        "note: gpu-spot: label node-type=gpu: the module puts it on its GPU spot pool (its ML-training Job selects it)",
        "note: gpu-spot: taints nvidia.com/gpu=true:NoSchedule, spot=true:PreferNoSchedule: the module puts them "
        "on its GPU spot pool",
    ]
    assert imported("compute")["autoscaling"] == {"min_replicas": 1, "max_replicas": 20}
    assert imported("compute")["labels"] == {} and imported("compute")["taints"] == []
    gpu = imported("gpu-spot")
    assert (gpu["instance_type"], gpu["autoscaling"], gpu["spot"]) == (
        "g4dn.xlarge",
        {"min_replicas": 0, "max_replicas": 3},
        True,
    )
    assert gpu["labels"] == {"node-type": "gpu"} and gpu["taints"] == GPU_TAINTS
    # one change holds both revisions
    assert Revision.objects.filter(config_type="MACHINE_POOL").values("change").distinct().count() == 1


def test_the_additional_pools_defaults(backends, cli, terraform):
    path = terraform(
        'module "m" {\n  source = "./modules/machine-pools"\n  cluster_id = "x"\n  create_additional_pool = true\n}\n'
    )
    code, _, err = cli("import", "--terraform", path, "--backend", "plain")
    assert code == 0
    assert err.splitlines() == [
        "note: additional: additional_pool_name not given: additional (the module's default)",
        "note: additional: additional_pool_instance_type not given: m5.xlarge (the module's default)",
        "note: additional: additional_pool_min_replicas not given: 1 (the module's default)",
        "note: additional: additional_pool_max_replicas not given: 5 (the module's default)",
    ]
    body = imported("additional")
    assert (body["instance_type"], body["autoscaling"]) == ("m5.xlarge", {"min_replicas": 1, "max_replicas": 5})


def test_schedule_type_variables_and_the_backend_from_the_ocm_cluster_id(backends, cli):
    code, out, err = cli("import", "--terraform", str(EXAMPLES / "schedule_type.tf"))
    assert (code, out) == (0, "MACHINE_POOL batch created (revision 1) on backend rosa-a\n")
    body = imported("batch")
    assert body["taints"] == [{"key": "workload-type", "value": "batch", "effect": "NoSchedule"}]
    assert body["autoscaling"] == {"min_replicas": 1, "max_replicas": 8}  # var.batch_max's default
    assert body["labels"] == {"team": "data-engineering", "workload-type": "batch"}


def test_a_dry_run_shows_the_documents_and_writes_nothing(backends, cli):
    before = written()
    code, out, err = cli("import", "--terraform", str(EXAMPLES / "both_pools.tf"), "--backend", "rosa-a", "--dry-run")
    assert code == 0 and written() == before
    assert out.startswith("# dry run: nothing written.") and "note: gpu-spot: " in err
    import yaml

    documents = yaml.safe_load(out)
    assert sorted(documents) == ["compute", "gpu-spot"]
    assert documents["gpu-spot"]["taints"] == GPU_TAINTS and documents["compute"]["backend"] == "rosa-a"
    code, out, _ = cli(
        "import", "--terraform", str(EXAMPLES / "both_pools.tf"), "--backend", "rosa-a", "--dry-run", "--format",
        "json",
    )  # fmt: skip
    answer = json.loads(out)
    assert answer["dry_run"] is True and [row["revision"] for row in answer["pools"]] == [None, None]
    assert written() == before


def test_a_dry_run_refuses_what_the_import_would(backends, cli, terraform):
    path = terraform(
        'module "m" {\n  source = "./modules/machine-pools"\n  cluster_id = "x"\n  create_additional_pool = true\n'
        '  additional_pool_instance_type = "m9.gigantic"\n}\n'
    )
    code, out, err = cli("import", "--terraform", path, "--backend", "rosa-a", "--dry-run")
    assert (code, out) == (1, "")
    assert err.startswith("error: main.tf:5 module.m.additional_pool_instance_type: unknown instance type; known: ")


MODULE = """module "machine_pools" {{
  source     = "./modules/machine-pools"
  cluster_id = module.rosa_cluster.cluster_id

  create_additional_pool = true
  additional_pool_name   = "batch-workers"
{extra}
}}
"""


@pytest.mark.parametrize(
    ("extra", "error"),
    [
        (
            "  additional_pool_disk_size = 500",
            "main.tf:7 module.machine_pools.additional_pool_disk_size: is not a variable of the machine-pools module "
            "(it has ",
        ),
        (
            '  additional_pool_taints = [\n    { key = "a", value = "b", effect = "Sometimes" },\n  ]',
            "main.tf:8 module.machine_pools.additional_pool_taints[0].effect: a taint's effect is one of NoSchedule, "
            "PreferNoSchedule, NoExecute (value: 'Sometimes')",
        ),
        (
            '  additional_pool_taints = [\n    { key = "a", value = "b", schedule_type = "Always" },\n  ]',
            "main.tf:8 module.machine_pools.additional_pool_taints[0].schedule_type: a taint's effect is one of "
            "NoSchedule, PreferNoSchedule, NoExecute (value: 'Always')",
        ),
        (
            '  additional_pool_taints = [{ key = "a", effect = "NoSchedule", schedule_type = "NoExecute" }]',
            "main.tf:7 module.machine_pools.additional_pool_taints[0].schedule_type: differs from effect "
            "(NoSchedule); schedule_type and effect name the same thing (value: 'NoExecute')",
        ),
        (
            "  additional_pool_max_replicas = local.max",
            "main.tf:7 module.machine_pools.additional_pool_max_replicas: is not a literal value or a variable with a "
            "default; the importer reads no other expressions (value: 'local.max')",
        ),
        (
            "  additional_pool_max_replicas = var.max",
            "main.tf:7 module.machine_pools.additional_pool_max_replicas: uses var.max, which this file does not "
            "declare (value: 'var.max')",
        ),
        (
            '  additional_pool_labels = {\n    team = upper("a")\n  }',
            "main.tf:8 module.machine_pools.additional_pool_labels.team: is not a literal value or a variable with a "
            "default; the importer reads no other expressions (value: 'upper(\"a\")')",
        ),
        (
            "  additional_pool_max_replicas = 100000",
            "main.tf:7 module.machine_pools.additional_pool_max_replicas: must be an integer from 1 to 500 "
            "(value: 100000)",
        ),
        (
            '  additional_pool_min_replicas = "two"',
            "main.tf:7 module.machine_pools.additional_pool_min_replicas: ",
        ),
        (
            "  count = 2",
            "main.tf:7 module.machine_pools.count: is not read: the importer makes the pools of one call of the "
            "module (value: '2')",
        ),
        (
            '  additional_pool_name = "again"',
            "main.tf:7 module.machine_pools.additional_pool_name: is given twice (first on line 6) (value: "
            "'additional_pool_name')",
        ),
        (
            '  additional_pool_labels = { "node.kubernetes.io/machinepool" = "x" }',
            "main.tf:7 module.machine_pools.additional_pool_labels.node.kubernetes.io/machinepool: is set by the "
            "portal on every node of a machine pool; choose another key",
        ),
        ("  create_gpu_spot_pool = 1", "main.tf:7 module.machine_pools.create_gpu_spot_pool: must be true or false"),
        (
            "  additional_pool_max_replicas = ",
            "main.tf:7: is not valid HCL (column 34) (value: 'additional_pool_max_replicas =')",
        ),
    ],
    ids=[
        "unknown-attribute", "bad-effect", "bad-schedule-type", "effect-and-schedule-type-differ", "non-literal",
        "undeclared-variable", "function-call", "above-the-cap", "not-a-number", "count", "given-twice",
        "reserved-label", "flag-not-bool", "not-hcl",
    ],
)  # fmt: skip
def test_bad_input_names_line_attribute_value_and_reason_and_writes_nothing(backends, cli, terraform, extra, error):
    before = written()
    code, out, err = cli("import", "--terraform", terraform(MODULE.format(extra=extra)), "--backend", "rosa-a")
    assert (code, out) == (1, "")
    assert err.startswith(f"error: {error}"), err
    assert written() == before


def test_a_variable_without_default_is_named_with_its_block(backends, cli, terraform):
    text = 'variable "max" {\n  type = number\n}\n\n' + MODULE.format(extra="  additional_pool_max_replicas = var.max")
    code, _, err = cli("import", "--terraform", terraform(text), "--backend", "rosa-a")
    assert code == 1
    assert err == (
        "error: main.tf:11 module.machine_pools.additional_pool_max_replicas: uses var.max, whose variable block "
        "(line 1) has no default; give it one, or write the value in the module call (value: 'var.max')\n"
    )


def test_the_backend_must_be_known_or_resolvable(backends, cli, terraform):
    before = written()
    path = terraform(MODULE.format(extra=""))
    assert cli("import", "--terraform", path, "--backend", "ghost")[2] == (
        "error: --backend: unknown backend; create it first with `config update BACKEND` (value: 'ghost')\n"
    )
    assert cli("import", "--terraform", path)[2] == (
        "error: main.tf:3 module.machine_pools.cluster_id: is an expression the importer cannot resolve; name the "
        "backend with --backend (value: 'module.rosa_cluster.cluster_id')\n"
    )
    other = terraform(MODULE.format(extra="").replace("module.rosa_cluster.cluster_id", '"nope"'), "other.tf")
    assert cli("import", "--terraform", other)[2] == (
        "error: other.tf:3 module.machine_pools.cluster_id: is no backend's OCM cluster id (ocm_cluster_id); name "
        "the backend with --backend (value: 'nope')\n"
    )
    clash = terraform((EXAMPLES / "schedule_type.tf").read_text(), "clash.tf")
    assert cli("import", "--terraform", clash, "--backend", "plain")[2] == (
        "error: clash.tf:15 module.batch.cluster_id: is backend rosa-a's OCM cluster id, not that of --backend plain "
        "(value: '27h3k9q2v8m4n1p6r5s0t7u3w2x9y4z1')\n"
    )
    assert written() == before


def test_a_duplicate_name_is_refused_in_the_file_and_against_existing_pools(backends, cli, terraform):
    twice = MODULE.format(extra="") + MODULE.format(extra="").replace('"machine_pools"', '"again"')
    before = written()
    code, _, err = cli("import", "--terraform", terraform(twice), "--backend", "rosa-a")
    assert (code, err) == (
        1,
        'error: main.tf:14 module.again.additional_pool_name: names a machine pool that module "machine_pools" '
        "(line 1) already makes; give each pool its own name (value: 'batch-workers')\n",
    )
    assert written() == before
    path = str(EXAMPLES / "basic_additional_pool.tf")
    assert cli("import", "--terraform", path, "--backend", "rosa-a")[0] == 0
    before = written()
    both = MODULE.format(extra="").replace('"batch-workers"', '"fresh"') + MODULE.format(extra="").replace(
        '"machine_pools"', '"second"'
    )
    code, _, err = cli("import", "--terraform", terraform(both, "both.tf"), "--backend", "plain")
    assert err == (
        "error: both.tf:14 module.second.additional_pool_name: a machine pool of this name exists (on backend "
        "rosa-a); import creates pools: choose another name, or change that pool with `config update MACHINE_POOL` "
        "(value: 'batch-workers')\n"
    )
    assert written() == before and not MachinePool.objects.filter(name="fresh").exists()  # all or none


def test_other_modules_are_skipped_and_a_file_without_pools_is_refused(backends, cli, terraform):
    text = 'module "rosa_cluster" {\n  source = "terraform-redhat/rosa-classic/rhcs"\n  cluster_name = "a"\n}\n'
    code, _, err = cli("import", "--terraform", terraform(text), "--backend", "rosa-a")
    assert (code, err) == (
        1,
        "error: main.tf: makes no machine pool: no call of the machine-pools module (source "
        "./modules/machine-pools) with create_additional_pool or create_gpu_spot_pool = true\n",
    )
    code, _, err = cli("import", "--terraform", terraform(text + MODULE.format(extra="")), "--backend", "rosa-a")
    assert code == 0
    assert err.splitlines()[0] == (
        'note: module "rosa_cluster" (line 1): source terraform-redhat/rosa-classic/rhcs is not the machine-pools '
        "module; skipped"
    )


def test_a_file_above_the_document_bound_is_refused_before_it_is_parsed(backends, cli, terraform, settings):
    settings.CONFIG_DOCUMENT_MAX_BYTES = 100
    code, _, err = cli("import", "--terraform", terraform(MODULE.format(extra="")), "--backend", "rosa-a")
    assert (code, err) == (
        1,
        "error: main.tf: is 191 bytes; a file of config documents is at most 100 (CONFIG_DOCUMENT_MAX_BYTES)\n",
    )
