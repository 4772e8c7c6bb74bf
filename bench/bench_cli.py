"""One CLI call, whole process: `manage.py pool list` on an empty SQLite database, start to exit.

- as installed: with the bytecode `make install` compiled, in an environment that forbids writing more
  (PYTHONDONTWRITEBYTECODE=1), so no run warms a cache for the next. This is the row with the target.
- without bytecode: every module compiled at each start (an empty PYTHONPYCACHEPREFIX hides the compiled
  files), what a user would get if `make install` did not compile.
- a bare interpreter that imports Django: the floor, so a reader on a loaded machine can compare ratios.

Start-up is dominated by imports: `python -X importtime manage.py pool list` shows what is loaded.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import tempfile

from bench.harness import Row, measure

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUNS = 15


def _env(var_dir: str, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHONPYCACHEPREFIX")}
    return {
        **env,
        "DEBUG": "true",
        "PORTAL_VAR_DIR": var_dir,
        "PYTHONDONTWRITEBYTECODE": "1",
        "DATABASE_URL": f"sqlite:///{var_dir}/db.sqlite3",
        **extra,
    }


def _call(root: pathlib.Path, env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, *args], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)


def cli_rows(root: pathlib.Path = ROOT, label: str = "") -> list[Row]:
    """The rows for the checkout at `root` (another checkout gives before/after figures on one machine)."""
    with tempfile.TemporaryDirectory() as var_dir, tempfile.TemporaryDirectory() as no_cache:
        installed = _env(var_dir)
        _call(root, installed, "manage.py", "migrate", "--noinput", "-v0")
        pool_list = ("manage.py", "pool", "list")
        bare = measure(
            "CLI: bare interpreter, `import django`",
            lambda: _call(root, installed, "-c", "import django"),
            runs=RUNS,
            warmup=1,
        )
        rows = [
            measure(
                f"CLI{label}: `manage.py pool list`, empty SQLite, whole process (as installed)",
                lambda: _call(root, installed, *pool_list),
                runs=RUNS,
                warmup=1,
                target="≤ 0.8 s",
            ),
            measure(
                f"CLI{label}: the same without bytecode (compiled at each start)",
                lambda: _call(root, _env(var_dir, PYTHONPYCACHEPREFIX=no_cache), *pool_list),
                runs=max(3, RUNS // 3),
                warmup=0,
            ),
        ]
        for row in rows:
            row.note = f"{row.median_s / bare.median_s:.1f}× the bare interpreter"
        return [*rows, bare]


def run() -> list[Row]:
    return cli_rows()


if __name__ == "__main__":  # `python -m bench.bench_cli [ROOT]`: the rows for another checkout
    from bench.harness import print_table

    other = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
    print_table(cli_rows(other, "" if other == ROOT else f" ({other.name})"))
