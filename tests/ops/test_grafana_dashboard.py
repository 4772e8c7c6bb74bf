"""deploy/grafana/pool-portal-usage.json (docs/operations.md, "Grafana"): a dashboard Grafana can import, whose
queries name only metrics that /metrics really exports."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from tests.ops.test_metrics import scrape
from tests.usage.factories import attempt_row

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "pool-portal-usage.json"
METRIC = re.compile(r"\b(portal_[a-z_]+)\b")


def queries(dashboard: dict) -> list[str]:
    found = [target["expr"] for panel in dashboard["panels"] for target in panel.get("targets", [])]
    found += [v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return found


def test_the_dashboard_is_valid_grafana_json():
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"] and dashboard["schemaVersion"] >= 36
    panels = dashboard["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"] and all(target["expr"] for target in panel["targets"]), panel["title"]
            assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    titles = " ".join(panel["title"] for panel in panels)
    assert "per project" in titles and "per node pool" in titles and "Cost" in titles
    for expr in queries(dashboard):
        assert expr.count("(") == expr.count(")") and expr.count("{") == expr.count("}"), expr


@pytest.mark.django_db
def test_its_queries_name_metrics_that_metrics_exports(client):
    now = timezone.now()
    attempt_row(started_at=now - timedelta(hours=2))
    attempt_row(project="vision", started_at=now - timedelta(minutes=5), ended_at=None)
    exported = {name for name, _ in scrape(client)}
    named = {name for expr in queries(json.loads(DASHBOARD.read_text())) for name in METRIC.findall(expr)}
    assert named >= {"portal_usage_gpu_seconds_total", "portal_usage_cost_dollars_total", "portal_usage_running_gpus"}
    assert named - exported == set()
