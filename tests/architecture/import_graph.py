"""Which app imports which: the layering of docs/architecture.md, read from the source with `ast`.

Every `import` and `from … import` counts, function-level ones included (a lazy import is still a
dependency), and so does a module named by dotted path in a call (`lazy.connect(signal,
"quotas.receivers.nodes_changed", …)`, `registry.register("POOL", "pools.services.config_handlers.PoolHandler")`:
portal.lazy and configs.registry import it on first use). Run `python -m tests.architecture.import_graph` for
the graph as text.
"""

from __future__ import annotations

import ast
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Bottom to top: an app may import only itself and the apps before it.
LAYERS = (
    "foundation",
    "configs",
    "access",
    "teams",
    "clusters",
    "pools",
    "workflows",
    "usage",
    "quotas",
    "notifications",
    "selfservice",
)
APPS = LAYERS[1:]
# The project wiring: these may import anything (they assemble the apps).
ROOT_MODULES = (
    "portal.settings",
    "portal.urls",
    "portal.wsgi",
    "portal.asgi",
    "portal.apps",
    "portal.devserver",
    "portal.periodic",
    "portal.ops",
    "portal.management",
)
# Foundation modules that import no Django at all, so the pure engine may use them.
DJANGO_FREE = ("portal.errors", "portal.json_paths")
PURE_ENGINE = "pools.engine"
DOTTED = re.compile(r"[a-z_]\w*(?:\.\w+)+")


def layer_of(module: str) -> str | None:
    """The layer a module belongs to; "root" for the wiring, None for what is not ours."""
    if _under(module, ROOT_MODULES):
        return "root"
    top = module.split(".")[0]
    if module == PURE_ENGINE or module.startswith(PURE_ENGINE + ".") or top == "portal":
        return "foundation"
    if top in APPS:
        return top
    if top == "kubesim":
        return "kubesim"
    return None


def _under(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def source_modules() -> dict[str, Path]:
    """Our modules: every .py file of the apps, portal and the test peer."""
    modules = {}
    for top in ("portal", "kubesim", *APPS):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def imports_of(module: str, path: Path, known: frozenset[str] = frozenset()) -> list[tuple[str, int]]:
    """Modules imported by one file (absolute names) with their line numbers; `from a import b` counts
    as `a.b` when that is one of our modules, else as `a`."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names = {f"{base}.{alias.name}" for alias in node.names}
            found += sorted((name if name in known else base, node.lineno) for name in names)
        elif isinstance(node, ast.Call):
            found += [(target, node.lineno) for target in _paths_named(node, known)]
    return found


def _paths_named(call: ast.Call, known: frozenset[str]) -> list[str]:
    """Our modules a call names by dotted path in a positional string ("quotas.receivers.nodes_changed" →
    quotas.receivers): the longest prefix that is a module of ours below its top package. The project wiring
    is left out: `os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")` names the settings for
    Django, it does not import them."""
    found = []
    for arg in call.args:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str) and DOTTED.fullmatch(arg.value)):
            continue
        parts = arg.value.split(".")
        module = next((".".join(parts[:n]) for n in range(len(parts), 1, -1) if ".".join(parts[:n]) in known), None)
        if module is not None and not _under(module, ROOT_MODULES):
            found.append(module)
    return found


def violations() -> list[str]:
    """Every import that goes up the layers, into the test peer, or out of the engine's purity."""
    problems = []
    modules = source_modules()
    for module, path in modules.items():
        source = layer_of(module)
        for target, line in imports_of(module, path, frozenset(modules)):
            reason = _refusal(module, source, target)
            if reason:
                problems.append(f"{path.relative_to(ROOT)}:{line}: {module} imports {target}: {reason}")
    return sorted(set(problems))


def _refusal(module: str, source: str | None, target: str) -> str | None:
    pure = _under(module, (PURE_ENGINE, *DJANGO_FREE))
    if pure and (target.split(".")[0] in ("django", "rest_framework", "celery", "kubernetes")):
        return "the engine and the Django-free foundation import no framework"
    dest = layer_of(target)
    if dest is None or source == "root":
        return None
    if dest == "kubesim":
        return None if source == "kubesim" else "kubesim is a test peer: no app imports it"
    if dest == "root":
        return "the project wiring is imported by nobody"
    if pure and not _under(target, (PURE_ENGINE, *DJANGO_FREE)):
        return "the engine may import only itself and the Django-free foundation"
    if source in (None, "kubesim"):
        return None if source is None else "the test peer imports no app"
    if LAYERS.index(dest) > LAYERS.index(source):
        return f"{source} is below {dest}"
    return None


def app_graph() -> dict[str, set[str]]:
    """Layer → the other layers it imports."""
    graph: dict[str, set[str]] = defaultdict(set)
    modules = source_modules()
    for module, path in modules.items():
        source = layer_of(module)
        for target, _ in imports_of(module, path, frozenset(modules)):
            dest = layer_of(target)
            if source and dest and dest != source:
                graph[source].add(dest)
    return graph


def main() -> int:
    graph = app_graph()
    for name in (*LAYERS, "root", "kubesim"):
        print(f"{name:12} → {', '.join(sorted(graph.get(name, ()), key=_order)) or '(nothing of ours)'}")
    problems = violations()
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


def _order(name: str) -> int:
    return LAYERS.index(name) if name in LAYERS else len(LAYERS)


if __name__ == "__main__":
    sys.exit(main())
