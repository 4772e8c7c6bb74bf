"""One CLI call, whole process: `manage.py pool list` on an empty SQLite database, start to exit.

- as installed: with the bytecode `make install` compiled, in an environment that forbids writing more
  (PYTHONDONTWRITEBYTECODE=1), so no run warms a cache for the next. This is the row with the target.
- without bytecode: every module compiled at each start (an empty PYTHONPYCACHEPREFIX hides the compiled
  files), what a user would get if `make install` did not compile.
- a bare interpreter that imports Django: the floor, so a reader on a loaded machine can compare ratios.
- `quota show` and `token create` on the demo data (`seed_demo`, SQLite, as installed): two commands a user
  types every day, one that reads and one that writes.

Start-up is dominated by imports: `python -X importtime manage.py pool list` shows what is loaded. Each row's
note gives the median CPU time of the process (user + system, what a loaded machine cannot hide in waiting)
and how many modules it had loaded when it exited.

`python -m bench.bench_cli --against ../before` compares two checkouts on this machine as the lead does:
each command on its own demo database per tree, the trees alternated run by run (which goes first swaps each
round), the load average printed before and after.
"""

from __future__ import annotations

import json
import os
import pathlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from bench.harness import Row, fmt_seconds, measure

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


# CPU seconds (user + system) of each call, by row name: the note's median
_CPU: dict[str, list[float]] = {}

# Runs manage.py as a shell does, then writes how many modules were loaded to the file in argv[1].
PROBE = """
import runpy, sys
report, sys.argv = sys.argv[1], ["manage.py", *sys.argv[2:]]
try:
    runpy.run_path("manage.py", run_name="__main__")
finally:
    open(report, "w").write(str(len(sys.modules)))
"""


def _call(root: pathlib.Path, env: dict[str, str], *args: str, quiet: bool = False, cpu: str = "") -> float:
    """One process, to its exit; its CPU seconds (recorded under `cpu` when named)."""
    stderr = subprocess.DEVNULL if quiet else None  # quiet: a warning each call (a token's secret is shown once)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, *args], cwd=root, env=env, check=True, stdout=subprocess.DEVNULL, stderr=stderr)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if cpu:
        _CPU.setdefault(cpu, []).append(used)
    return used


def _modules(root: pathlib.Path, env: dict[str, str], *args: str) -> int:
    """How many modules `manage.py ARGS` had loaded when it exited."""
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as report:
        subprocess.run(
            [sys.executable, "-c", PROBE, report.name, *args],
            cwd=root,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return int(report.read())


POOL_LIST = ("pool", "list")
QUOTA_SHOW = ("quota", "show", "gpu-cluster-01-h100")


def _token_create(name: str) -> tuple[str, ...]:
    return ("token", "create", "researcher", name, "--expires", "1d")


def cli_rows(root: pathlib.Path = ROOT, label: str = "") -> list[Row]:
    """The rows for the checkout at `root` (another checkout gives before/after figures on one machine)."""
    with tempfile.TemporaryDirectory() as var_dir, tempfile.TemporaryDirectory() as no_cache:
        installed = _env(var_dir)
        _call(root, installed, "manage.py", "migrate", "--noinput", "-v0")
        bare = measure(
            "CLI: bare interpreter, `import django`",
            lambda: _call(root, installed, "-c", "import django"),
            runs=RUNS,
            warmup=1,
        )
        name = f"CLI{label}: `manage.py pool list`, empty SQLite, whole process (as installed)"
        rows = [
            measure(
                name,
                lambda: _call(root, installed, "manage.py", *POOL_LIST, cpu=name),
                runs=RUNS,
                warmup=1,
                target="≤ 0.8 s",
            ),
            measure(
                f"CLI{label}: the same without bytecode (compiled at each start)",
                lambda: _call(root, _env(var_dir, PYTHONPYCACHEPREFIX=no_cache), "manage.py", *POOL_LIST),
                runs=max(3, RUNS // 3),
                warmup=0,
            ),
        ]
        modules = {rows[0].name: _modules(root, installed, *POOL_LIST)}
        demo, demo_modules = _demo_rows(root, installed, label)
        rows += demo
        modules.update(demo_modules)
        for row in rows:
            row.note = f"{row.median_s / bare.median_s:.1f}× the bare interpreter"
            if row.name in _CPU:
                row.note += f"; CPU {fmt_seconds(statistics.median(_CPU[row.name][-row.runs :]))}"
            if row.name in modules:
                row.note += f"; {modules[row.name]} modules"
        return [*rows, bare]


def _seed(root: pathlib.Path, env: dict[str, str]) -> None:
    """The demo's node pools and accounts, in the rows' database."""
    subprocess.run([sys.executable, "manage.py", "seed_demo"], cwd=root, env=env, check=True, capture_output=True)


def _demo_rows(root: pathlib.Path, env: dict[str, str], label: str) -> tuple[list[Row], dict[str, int]]:
    _seed(root, env)
    names = iter(range(10**6))  # a token's name is unique per user: one per call
    show = f"CLI{label}: `manage.py quota show gpu-cluster-01-h100`, demo data, whole process (as installed)"
    create = f"CLI{label}: `manage.py token create researcher NAME --expires 1d`, demo data (as installed)"
    rows = [
        measure(show, lambda: _call(root, env, "manage.py", *QUOTA_SHOW, cpu=show), runs=RUNS, warmup=1),
        measure(
            create,
            lambda: _call(root, env, "manage.py", *_token_create(f"bench-{next(names)}"), quiet=True, cpu=create),
            runs=RUNS,
            warmup=1,
        ),
    ]
    modules = {
        show: _modules(root, env, *QUOTA_SHOW),
        create: _modules(root, env, *_token_create("bench-modules")),
    }
    return rows, modules


def compare(before: pathlib.Path, after: pathlib.Path = ROOT, runs: int = RUNS) -> None:
    """`quota show`, `token create` and `pool list` of two checkouts, alternated run by run on demo databases of
    their own: median wall and CPU time, and the modules loaded, with the load average before and after."""
    trees = {"before": before, "after": after}
    commands = {"quota show": QUOTA_SHOW, "token create": None, "pool list": POOL_LIST}
    with tempfile.TemporaryDirectory() as var_before, tempfile.TemporaryDirectory() as var_after:
        envs = {"before": _env(var_before), "after": _env(var_after)}
        for tree, root in trees.items():
            _call(root, envs[tree], "manage.py", "migrate", "--noinput", "-v0")
            _seed(root, envs[tree])
        print(f"load average before: {_load()}", file=sys.stderr)
        walls: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        names = iter(range(10**6))
        for run in range(runs + 1):  # the first round warms the file cache and is not counted
            order = list(trees) if run % 2 else list(reversed(trees))
            for command, args in commands.items():
                for tree in order:
                    argv = args or _token_create(f"bench-{next(names)}")
                    start = time.perf_counter()
                    used = _call(trees[tree], envs[tree], "manage.py", *argv, quiet=args is None)
                    if run:
                        walls.setdefault((command, tree), []).append(time.perf_counter() - start)
                        cpus.setdefault((command, tree), []).append(used)
        print(f"load average after: {_load()}", file=sys.stderr)
        rows = []
        for command, args in commands.items():
            for tree, root in trees.items():
                modules = _modules(root, envs[tree], *(args or _token_create("bench-modules")))
                rows.append(
                    {
                        "command": command,
                        "tree": f"{tree} ({root})",
                        "wall": fmt_seconds(statistics.median(walls[command, tree])),
                        "cpu": fmt_seconds(statistics.median(cpus[command, tree])),
                        "modules": modules,
                        "runs": runs,
                    }
                )
        print(json.dumps(rows, indent=2))


def _load() -> str:
    return pathlib.Path("/proc/loadavg").read_text().strip() if pathlib.Path("/proc/loadavg").exists() else "?"


def run() -> list[Row]:
    return cli_rows()


if __name__ == "__main__":
    # `python -m bench.bench_cli [ROOT]`: the rows for another checkout;
    # `python -m bench.bench_cli --against BEFORE [RUNS]`: that checkout and this one, alternated
    from bench.harness import print_table

    if sys.argv[1:2] == ["--against"]:
        compare(pathlib.Path(sys.argv[2]).resolve(), runs=int(sys.argv[3]) if len(sys.argv) > 3 else RUNS)
    else:
        other = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT
        print_table(cli_rows(other, "" if other == ROOT else f" ({other.name})"))
