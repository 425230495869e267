"""The package's layers, from the import statements themselves (every ``import`` and
``from ... import`` in ``analysis/``, inside functions and ``TYPE_CHECKING`` blocks too):
no module imports one of a higher layer, and there is no cycle, between modules or between
the top-level packages.

Layers, lowest first (README "Developers: where things go"): ``errors``, ``outputs``,
``host`` < ``stats`` < ``ingest`` < ``capture`` (beside ingest: it reads its captures back
through ingest; ingest never imports it) < ``metrics`` < ``models``, ``seeds`` < ``study`` <
``report`` < ``commands``, ``cli`` and the programs (``warm``, any ``__main__``: run, never
imported).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from tests.conftest import REPO

PACKAGE = REPO / "analysis"
LAYERS = {
    "": 0,  # analysis/__init__.py: the version
    "errors": 0,
    "outputs": 0,
    "host": 0,
    "stats": 1,
    "ingest": 2,
    "capture": 3,
    "metrics": 4,
    "models": 5,
    "seeds": 5,
    "study": 6,
    "report": 7,
    "commands": 8,
    "cli": 8,
    "warm": 8,
}
PROGRAM = 8

Graph = Mapping[str, set[str]]


def _name(path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module → the ``analysis`` modules it imports (``from pkg import module`` names the
    module; ``from module import name`` the module)."""
    paths = {_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base
                          for a in node.names}  # fmt: skip
        graph[name] = {_module(t, paths) for t in found if t.split(".")[0] == "analysis"} - {name}
    return graph


def _module(target: str, paths: Mapping[str, object]) -> str:
    while target not in paths:
        target = target.rpartition(".")[0]
    return target


def layer(module: str) -> int:
    """The layer of ``module`` (a program's, whatever package holds it)."""
    if module.rsplit(".", 1)[-1] == "__main__":
        return PROGRAM
    parts = module.split(".")
    return LAYERS[parts[1] if len(parts) > 1 else ""]


def upward(graph: Graph) -> list[str]:
    """``a -> b`` for every import of a higher layer or of a ``__main__``."""
    return sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        for b in targets
        if layer(b) > layer(a) or b.endswith(".__main__")
    )


def cycles(graph: Graph) -> list[list[str]]:
    """One cycle per strongly connected component of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def package_graph(graph: Graph) -> dict[str, set[str]]:
    """Top-level package (or module directly in ``analysis``, such as ``errors``) → those
    its modules import; a ``__main__`` is a program run, not part of its package."""

    def top(module: str) -> str:
        return ".".join(module.split(".")[:2])

    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        if not a.endswith(".__main__"):
            out.setdefault(top(a), set()).update(top(b) for b in targets if top(b) != top(a))
    return out


def test_no_module_imports_a_higher_layer():
    assert upward(import_graph()) == []


def test_no_import_cycle_between_modules():
    assert cycles(import_graph()) == []


def test_no_import_cycle_between_packages():
    assert cycles(package_graph(import_graph())) == []


def test_every_top_level_module_has_a_layer():
    assert {m.split(".")[1] for m in import_graph() if "." in m} <= LAYERS.keys()


def test_the_checks_see_what_they_must():
    graph = import_graph()
    # The scan sees imports, a lazy one (inside a function) too.
    assert "analysis.ingest.mmtests" in graph["analysis.study.study"]
    assert "analysis.study.runs" in graph["analysis.commands.paper"]
    # An upward import, a cycle between modules and one between packages are found.
    assert upward({"analysis.ingest.x": {"analysis.report.y"}}) == [
        "analysis.ingest.x -> analysis.report.y"
    ]
    assert upward({"analysis.metrics.x": {"analysis.stats.validation_compare.__main__"}})
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles(
        package_graph({"analysis.ingest.benchmarks": {"analysis.metrics.ops"},
                       "analysis.metrics.ops": {"analysis.ingest.vmstat"}})
    ) == [["analysis.ingest", "analysis.metrics"]]  # fmt: skip
