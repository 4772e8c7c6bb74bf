"""A separate interpreter on the test database: what another process of the deployment would see."""

from __future__ import annotations

import subprocess
from pathlib import Path

from django.db import connection

from tests.security.test_production_settings import run

SCRAPE = (
    "import django; django.setup(); from portal.ops.collectors import metrics_page; print(metrics_page()[0].decode())"
)


def database_env() -> dict[str, str]:
    settings = connection.settings_dict
    url = f"postgres://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"
    return {"DEBUG": "true", "DATABASE_URL": url}


def in_another_process(args: list[str], var_dir: Path, **env: str) -> subprocess.CompletedProcess:
    return run(args, var_dir, **database_env(), **env)
