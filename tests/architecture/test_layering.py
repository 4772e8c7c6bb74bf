"""The layering of docs/architecture.md holds: no app imports one above it (tests/architecture/import_graph)."""

from tests.architecture import import_graph


def test_no_app_imports_one_above_it():
    assert import_graph.violations() == []


def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch):
    # A file in a lower app importing a higher one is reported, with its line.
    (tmp_path / "access").mkdir()
    (tmp_path / "access" / "bad.py").write_text("def f():\n    from workflows.models import Workflow\n")
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    monkeypatch.setattr(import_graph, "APPS", ("access", "workflows"))
    assert import_graph.violations() == [
        "access/bad.py:2: access.bad imports workflows.models: access is below workflows",
    ]


def test_the_checker_sees_an_upward_module_wired_by_path(tmp_path, monkeypatch):
    # A receiver or hook named by dotted path (portal.lazy, configs.registry) is a dependency too.
    (tmp_path / "access").mkdir()
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "receivers.py").write_text("def f(**kwargs):\n    pass\n")
    (tmp_path / "access" / "apps.py").write_text(
        "from portal import lazy\n\n\ndef ready(signal):\n"
        '    lazy.connect(signal, "workflows.receivers.f", dispatch_uid="x")\n'
    )
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    monkeypatch.setattr(import_graph, "APPS", ("access", "workflows"))
    assert import_graph.violations() == [
        "access/apps.py:5: access.apps imports workflows.receivers: access is below workflows",
    ]


def test_every_path_wired_at_run_time_is_written_where_the_checker_reads_it():
    """What portal.lazy and configs.registry hold was named by a string literal in a call, as the checker reads
    paths: a path put together at run time (an f-string) would hide its module from the layering."""
    import ast

    from configs import registry
    from portal import lazy

    modules = import_graph.source_modules()
    literal = set()
    for path in modules.values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                literal |= {arg.value for arg in node.args if isinstance(arg, ast.Constant)}
    wired = {*lazy.PATHS, *registry._HANDLER_PATHS.values(), *registry._COMPANION_PATHS.values()}
    assert len(wired) >= 30
    assert sorted(wired - literal) == []


def test_the_engine_stays_pure(tmp_path, monkeypatch):
    (tmp_path / "pools" / "engine").mkdir(parents=True)
    (tmp_path / "pools" / "engine" / "x.py").write_text("import django.db\nfrom pools.models import Pool\n")
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    monkeypatch.setattr(import_graph, "APPS", ("pools",))
    assert [v.split(": ", 2)[2] for v in import_graph.violations()] == [
        "the engine and the Django-free foundation import no framework",
        "the engine may import only itself and the Django-free foundation",
    ]


def test_docs_architecture_shows_the_graph_the_code_has(capsys):
    page = (import_graph.ROOT / "docs" / "architecture.md").read_text()
    shown = page.split("$ python -m tests.architecture.import_graph\n", 1)[1].split("```", 1)[0]
    import_graph.main()
    assert shown == capsys.readouterr().out


def _imported(node) -> list[str]:
    import ast

    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def test_the_process_harness_imports_no_app_at_module_level_and_no_test_code():
    """soak/ (the production shape as processes: the scale tests, the pipeline bench and `make soak` share it) is
    not a Django app: an app is imported only inside its functions, once the caller set Django up; it imports
    nothing from tests/, and no app, portal or kubesim module imports it."""
    import ast

    ours = ("portal", "kubesim", "tests", *import_graph.APPS)
    problems = []
    for path in sorted((import_graph.ROOT / "soak").glob("*.py")):
        tree = ast.parse(path.read_text())
        top_level = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
        for node in top_level:
            problems += [f"{path.name}:{node.lineno} {m}" for m in _imported(node) if m.split(".")[0] in ours]
        for node in ast.walk(tree):
            problems += [f"{path.name}:{node.lineno} {m}" for m in _imported(node) if m.split(".")[0] == "tests"]
    for module, path in import_graph.source_modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            problems += [f"{module} imports {m}" for m in _imported(node) if m.split(".")[0] == "soak"]
    assert len(list((import_graph.ROOT / "soak").glob("*.py"))) >= 8
    assert problems == []
