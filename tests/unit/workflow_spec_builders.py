"""Builders shared by the workflow spec tests (tests/unit/test_workflow_spec*.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from workflows.spec import SpecError, parse_workflow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples" / "workflows"

FULL = """
version: 2
workflow:
  name: train-resnet
  labels: {team: vision, example.com/tier: gold, run: 3}
  timeout: {exec_timeout: 8h, queue_timeout: PT6H}
  resources:
    default: {cpu: 500m, gpu: 0, memory: 2Gi}
    gpu: {cpu: 8, gpu: 2, memory: 64Gi, storage: 100Gi, platform: a100, nodesExcluded: [node-7]}
  groups:
  - name: trainers
    ignoreNonleadStatus: false
    tasks:
    - name: Leader_0
      lead: true
      image: nvcr.io/nvidia/pytorch:24.01-py3
      command: [torchrun]
      args: [--nnodes, 2, train.py]
      environment: {EPOCHS: 10, DEBUG: true, RUN: "{{workflow_id}}"}
      resource: gpu
      privileged: true
      hostNetwork: true
      volumeMounts: [/data, "/scratch:/mnt/scratch"]
      exitActions: {complete: "0", RESCHEDULE: "1-10,16"}
    - name: worker-1
      image: nvcr.io/nvidia/pytorch:24.01-py3
      command: [torchrun]
      resource: gpu
  - name: report
    barrier: false
    tasks:
    - {name: summarize, image: "python:3.12", command: [python, summarize.py]}
"""


def task(**fields) -> dict:
    return {"name": "train", "image": "nvcr.io/nvidia/pytorch:24.01-py3", "command": ["python"], **fields}


def spec(*, tasks=None, version=2, **workflow) -> dict:
    body = {"name": "wf", "resources": {"default": {"cpu": 1}}, **workflow}
    if "groups" not in workflow:
        body["tasks"] = tasks if tasks is not None else [task()]
    return {"version": version, "workflow": body}


def with_task(**fields) -> dict:
    return spec(tasks=[task(**fields)])


def refused(document, *, field: str, reason: str = "", **kwargs) -> SpecError:
    with pytest.raises(SpecError) as caught:
        parse_workflow(document, **kwargs)
    assert caught.value.field == field, str(caught.value)
    assert reason in caught.value.reason, str(caught.value)
    return caught.value
