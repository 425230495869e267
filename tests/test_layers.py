"""The package's layers, from the import statements themselves (every ``import`` and
``from ... import`` in ``analysis/``, inside functions and ``TYPE_CHECKING`` blocks too):
no module imports one of a higher layer, and there is no cycle: between modules, between the
top-level packages, between the siblings of any package (subpackages and modules), or between
a package's own modules and one of its subpackages.

Layers, lowest first (docs/developing.md "Layers"): ``errors``, ``outputs``,
``host`` < ``stats`` < ``ingest`` < ``capture`` (beside ingest: it reads its captures back
through ingest; ingest never imports it) < ``metrics`` < ``models``, ``seeds`` <
``study``, ``notebooks`` < ``report`` < ``commands``, ``cli`` and the programs (``warm``, any
``__main__``: run, never imported).

``analysis/report/`` only renders: it renders what a study computed, so none of its modules
imports ``analysis/models/`` (a model's result reaches it through ``analysis/study/``) or
reads the file system (no ``open``, ``read_text``, ``read_bytes``, ``json.load``, polars'
``read_*``/``scan_*``, ``glob``, ``iterdir``, ...; writing its outputs is its job).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping, Set

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
    "notebooks": 6,
    "report": 7,
    "commands": 8,
    "cli": 8,
    "warm": 8,
}
PROGRAM = 8
RENDERERS = "analysis.report"
# What a renderer never imports: the models compute, a study holds their results.
COMPUTES = ("analysis.models",)
# Calls that read the file system, by the called name (a function or a method).
READS = frozenset(
    {"open", "read_text", "read_bytes", "load", "safe_load", "glob", "rglob", "iterdir",
     "listdir", "scandir", "walk"}
)  # fmt: skip
READ_PREFIXES = ("read_", "scan_")  # polars' (and the package's) readers and lazy scans

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


def collapse(graph: Graph, unit: Callable[[str], str]) -> dict[str, set[str]]:
    """``graph`` with every module replaced by its ``unit`` (imports within a unit dropped);
    a ``__main__`` is a program run, not part of its package."""
    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        if not a.endswith(".__main__"):
            out.setdefault(unit(a), set()).update(unit(b) for b in targets if unit(b) != unit(a))
    return out


def level_graph(graph: Graph, depth: int) -> dict[str, set[str]]:
    """Modules cut to their first ``depth`` name parts: at depth 2 the top-level packages (and
    modules directly in ``analysis``, such as ``errors``), at 3 ``analysis.ingest.ftrace``
    beside ``analysis.ingest.histogram``, and so on: the siblings of every package."""
    return collapse(graph, lambda m: ".".join(m.split(".")[:depth]))


def package_graph(graph: Graph) -> dict[str, set[str]]:
    """Top-level package (or module directly in ``analysis``) → those its modules import."""
    return level_graph(graph, 2)


def directory_graph(graph: Graph, packages: Set[str]) -> dict[str, set[str]]:
    """Each package below ``analysis`` with the modules directly in it as one node (as Go
    counts a directory), so a package whose own module imports a subpackage that imports one
    of the package's modules back is a cycle; ``analysis``'s own modules stay apart."""

    def unit(module: str) -> str:
        parent = module.rpartition(".")[0]
        return module if module in packages or parent in ("analysis", "") else parent

    return collapse(graph, unit)


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(f"{package}.")


def renderer_imports(graph: Graph) -> list[str]:
    """``a -> b`` for every module of :data:`RENDERERS` importing one of :data:`COMPUTES`."""
    return sorted(
        f"{a} -> {b}"
        for a, targets in graph.items()
        if _within(a, RENDERERS)
        for b in targets
        if any(_within(b, c) for c in COMPUTES)
    )


def file_reads(source: str, where: str) -> list[str]:
    """``where:line name`` of every call in ``source`` that reads the file system, in
    source order."""
    found = []
    for node in ast.walk(ast.parse(source, where)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in READS or name.startswith(READ_PREFIXES):
            found.append((node.lineno, node.col_offset, name))
    return [f"{where}:{line} {name}" for line, _, name in sorted(found)]


def _packages() -> set[str]:
    return {_name(p) for p in PACKAGE.rglob("__init__.py")}


def test_no_module_imports_a_higher_layer():
    assert upward(import_graph()) == []


def test_no_import_cycle_between_modules():
    assert cycles(import_graph()) == []


def test_no_import_cycle_between_packages():
    assert cycles(package_graph(import_graph())) == []


def test_no_import_cycle_between_siblings_at_any_depth():
    graph = import_graph()
    depths = range(2, max(len(m.split(".")) for m in graph) + 1)
    assert {d: cycles(level_graph(graph, d)) for d in depths} == {d: [] for d in depths}


def test_no_import_cycle_between_a_package_and_its_subpackages():
    assert cycles(directory_graph(import_graph(), _packages())) == []


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
    # Siblings inside a package, and a package's own module against its subpackage (the
    # registry of events once lived in ingest/ftrace, imported by ingest/histogram, while
    # ingest/ftrace read files through ingest/textfile).
    siblings = {
        "analysis.ingest.a.x": {"analysis.ingest.b"},
        "analysis.ingest.b": {"analysis.ingest.a.y"},
    }
    assert cycles(level_graph(siblings, 3)) == [["analysis.ingest.a", "analysis.ingest.b"]]
    assert cycles(package_graph(siblings)) == []
    was = {"analysis.ingest.histogram": {"analysis.ingest.ftrace.events"},
           "analysis.ingest.ftrace.reader": {"analysis.ingest.textfile"}}  # fmt: skip
    packages = {"analysis", "analysis.ingest", "analysis.ingest.ftrace"}
    assert cycles(directory_graph(was, packages)) == [["analysis.ingest", "analysis.ingest.ftrace"]]
    assert cycles(level_graph(was, 3)) == []
    assert directory_graph({"analysis.errors": {"analysis.host"}}, packages) == {
        "analysis.errors": {"analysis.host"}
    }


def test_the_report_imports_no_model():
    assert renderer_imports(import_graph()) == []


def test_the_report_reads_no_file():
    renderers = PACKAGE / "report"
    found = [
        r
        for path in sorted(renderers.rglob("*.py"))
        for r in file_reads(path.read_text(), str(path.relative_to(REPO)))
    ]
    assert found == []


def test_the_renderer_checks_see_a_violation():
    # A renderer importing a model (directly or a submodule) is named; one importing a
    # study, or a model importing anything below it, is not.
    graph = {
        "analysis.report.paper.sweep": {"analysis.models.throttle", "analysis.study.sweep"},
        "analysis.report.charts": {"analysis.models"},
        "analysis.report.units": {"analysis.stats.describe"},
        "analysis.study.sweep": {"analysis.models.throttle"},
        "analysis.reporting": {"analysis.models.x"},
    }
    assert renderer_imports(graph) == [
        "analysis.report.charts -> analysis.models",
        "analysis.report.paper.sweep -> analysis.models.throttle",
    ]
    source = "\n".join(
        [
            "vm = json.loads(Path(p).read_text())",  # 1
            "raw = path.read_bytes()",  # 2
            "with open(p) as f: json.load(f)",  # 3: open and json.load
            "frame = pl.read_parquet(p)",  # 4
            "lazy = pl.scan_csv(p)",  # 5
            "found = sorted(root.rglob('vm.json'))",  # 6
            "text = read_text(p)",  # 7: a reader imported by name
            "out.write_text(tex)",  # writing an output is rendering
            "chart.save(str(path), format='pdf')",
            "rows = table.text(indent=2)",
        ]
    )
    assert [r.split(":")[1] for r in file_reads(source, "x.py")] == [
        "1 read_text", "2 read_bytes", "3 open", "3 load", "4 read_parquet",
        "5 scan_csv", "6 rglob", "7 read_text",
    ]  # fmt: skip
