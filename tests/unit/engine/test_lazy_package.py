"""`pools.engine` loads its modules on first use: importing the package, or its quantities and fair shares,
does not import the template sandbox (Jinja2) or the pod schema (Pool Portal issue #35: a `quota show` paid
for them at every start). Each check runs in a fresh interpreter: this one has imported the whole engine."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _run(code: str) -> None:
    process = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert process.returncode == 0, process.stderr


def test_the_package_and_its_quantities_load_no_sandbox():
    _run(
        """
        import sys
        import pools.engine
        from pools.engine import EngineError, parse_quantity
        from pools.engine.fairshare import fair_share
        assert parse_quantity("1Gi").value == 2**30
        loaded = [name for name in sys.modules if name == "jinja2" or name.startswith(("jinja2.", "pools.engine."))]
        assert "jinja2" not in loaded and "pools.engine.sandbox" not in loaded, loaded
        assert "pools.engine.schema" not in loaded and "pools.engine.resolve" not in loaded, loaded
        """
    )


@pytest.mark.parametrize("module_first", [True, False])
def test_a_name_shared_with_its_module_is_the_function_whichever_is_imported_first(module_first):
    """`resolve` and `merge` are both a function and the module defining it: the package's name is the function,
    as when the package imported everything eagerly."""
    first = "import pools.engine.resolve, pools.engine.merge" if module_first else "pass"
    _run(
        f"""
        {first}
        import types
        import pools.engine
        from pools.engine import merge, resolve
        from pools.engine import resolve as again
        assert isinstance(resolve, types.FunctionType) and resolve.__module__ == "pools.engine.resolve", resolve
        assert isinstance(merge, types.FunctionType) and merge.__module__ == "pools.engine.merge", merge
        assert again is resolve is pools.engine.resolve
        import pools.engine.resolve as module_too
        assert module_too is resolve  # as before: the package's attribute wins over the submodule
        """
    )


def test_every_public_name_resolves_and_a_submodule_still_imports_by_name():
    _run(
        """
        import types
        import pools.engine as engine
        assert sorted(engine.__all__) == sorted(engine._WHERE), set(engine.__all__) ^ set(engine._WHERE)
        for name in engine.__all__:
            getattr(engine, name)
        assert set(engine.__all__) <= set(dir(engine))
        from pools.engine import schema, quota_pass
        assert isinstance(schema, types.ModuleType) and isinstance(quota_pass, types.ModuleType)
        try:
            engine.no_such_name
        except AttributeError as error:
            assert "no_such_name" in str(error)
        else:
            raise AssertionError("an unknown name must raise AttributeError")
        """
    )
