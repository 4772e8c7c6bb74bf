"""Run every `bench/bench_*.py` module (each exposes `run() -> list[Row]`) and print one table."""

from __future__ import annotations

import importlib
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.harness import print_table  # noqa: E402


def main(selected: list[str]) -> None:
    rows = []
    for path in sorted(pathlib.Path(__file__).parent.glob("bench_*.py")):
        if selected and not any(s in path.stem for s in selected):
            continue
        module = importlib.import_module(f"bench.{path.stem}")
        print(f"# {path.stem}", file=sys.stderr)
        rows.extend(module.run())
    print_table(rows)


if __name__ == "__main__":
    main(sys.argv[1:])
