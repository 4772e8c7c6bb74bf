"""docs/clusters.md: its placement, resource and backend commands run as written against the demo."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

from django.core.management import call_command

from clusters import inventory
from clusters.models import Backend
from tests.test_docs_examples import bash_commands

ROOT = Path(__file__).resolve().parents[2]
SKIP = ("config", "watch_cluster", "backend test")  # need a real cluster / run forever


def test_clusters_page_commands_run_as_written(demo_pools, kube_server, monkeypatch):
    monkeypatch.chdir(ROOT)
    Backend.objects.update(api_url=kube_server.url)
    for backend in Backend.objects.all():
        inventory.sync_backend(backend.pk)
    commands = [
        args
        for args in bash_commands(ROOT / "docs" / "clusters.md")
        if not any(" ".join(args).startswith(skip) for skip in SKIP)
    ]
    assert len(commands) >= 5
    outputs = {}
    for args in commands:
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
        outputs[" ".join(args)] = out.getvalue()
    placement = next(
        text for command, text in outputs.items() if command.startswith("placement") and "--format json" in command
    )
    assert [n["name"] for n in json.loads(placement)["nodes"] if n["fits"]] == ["h100-node-1"]
    resources = next(
        text for command, text in outputs.items() if command.startswith("resource") and "--format json" in command
    )
    training = json.loads(resources)["pools"]["robotics-training"]
    assert training["nodes"] == 8 and training["allocatable"]["nvidia.com/gpu"] == 56
