"""Every number the command line takes has a bound (issue #31 point 3; docs/limits.md, "The command line"): a
value out of it, or no number at all (1e30, NaN, inf, `²`, 5,000 digits), is one line on stderr naming the
option, the value and the bound, and exit code 1; never a traceback (argparse's `type=int` took 10^20 to the
database's LIMIT, `²`.isdigit() reached int(), a `--max-age nan` passed every heartbeat)."""

from __future__ import annotations

import pytest
from django.core.management import base

from tests.clirun import run_as_cli
from tests.workflows.conftest import submitted  # noqa: F401  (a fixture)

NOT_NUMBERS = ["1e30", "NaN", "inf", "-1", "0", "5.5", "\u00b2", "9" * 5000, "99999999999999999999"]


@pytest.fixture
def cli(capsys, monkeypatch):
    monkeypatch.setattr(base.connections, "close_all", lambda: None)  # keep the test's transaction
    return lambda app, name, *args: run_as_cli(capsys, app, name, *args)


def refused(cli, app: str, name: str, *args: str) -> str:
    code, out, err = cli(app, name, *args)
    assert (code, out) == (1, ""), (args, code, out, err[:300])
    assert err.startswith("error: ") and err.count("\n") == 1, err[:300]
    return err


@pytest.mark.parametrize("value", NOT_NUMBERS + ["1001"])
def test_page_sizes(cli, pool, value):
    for app, name, verb in (("workflows", "workflow", "list"), ("pools", "config", "history")):
        err = refused(cli, app, name, verb, "--limit", value)
        assert err.startswith("error: --limit: must be a whole number from 1 to 1000 (value: "), err[:200]
    assert cli("workflows", "workflow", "list", "--limit", "1000")[0] == 0


@pytest.mark.parametrize("value", NOT_NUMBERS + ["2147483648"])
def test_revisions(cli, pool, value):
    for args, option in (
        (("diff", "POOL", "batch", value, "1"), "FIRST"),
        (("diff", "POOL", "batch", "1", value), "SECOND"),
        (("rollback", "POOL", "batch", value), "REVISION"),
    ):
        err = refused(cli, "pools", "config", *args)
        assert err.startswith(f"error: {option}: must be a whole number from 1 to 2147483647"), err[:200]


@pytest.mark.parametrize("value", NOT_NUMBERS + ["5001"])
def test_log_tail(cli, submitted, value):  # noqa: F811
    workflow = submitted()
    err = refused(cli, "workflows", "workflow", "logs", workflow.workflow_id, "--tail", value)
    assert err.startswith("error: --tail: must be a whole number from 1 to 5000"), err[:200]


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "86401", "1e30", "\u00b2", "9" * 5000])
def test_watcher_probe_max_age(cli, db, value):
    err = refused(cli, "clusters", "watcher_health", "watch_workflows", "--max-age", value)
    assert err.startswith("error: --max-age: must be a number of seconds above 0 and at most 86400"), err[:200]


@pytest.mark.parametrize("value", NOT_NUMBERS + ["65536"])
def test_dev_server_ports(cli, value):
    """Refused before anything starts (the ports are checked free next, docs: make dev PORT=…)."""
    for option in ("--port", "--kubesim-port"):
        err = refused(cli, "portal", "devserver", option, value)
        assert err.startswith(f"error: {option}: must be a whole number from 1 to 65535 (value: "), err[:200]
