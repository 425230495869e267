"""One home per idea (issue 31), read from the package's own source as tests/test_layers.py
reads its imports:

- capture metadata: the files ``mmlab.json``, ``vm.json`` and ``boot.json`` are named, and
  their keys read, only in :mod:`analysis.ingest.capture_meta` (the writers in
  ``analysis/capture/`` name the files through it and build their documents as dicts);
- one grid grammar: only :mod:`analysis.ingest.grid` parses a grid, for the two sweeps;
- a subcommand (``analysis/commands/``) parses arguments and calls: it imports no layer
  that computes (stats, metrics, ingest; ``mmlab ingest`` alone calls the ingest layer,
  its subject), no numerical library, and no function of it branches more than
  :data:`MAX_COMPLEXITY` times.

Each scanner is run on planted violations too, so that a scan that sees nothing fails.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping

import pytest

from analysis.ingest import capture_meta
from tests.conftest import DATA, REPO

PACKAGE = REPO / "analysis"
CAPTURE_META = "analysis/ingest/capture_meta.py"
WRITERS = "analysis/capture/"
METADATA_FILES = (capture_meta.MMLAB_JSON, capture_meta.VM_JSON, capture_meta.BOOT_JSON)
# Keys of the metadata files that are also ordinary words of other dicts (a plan's params
# and pressure, a row's run and iteration, a trace file, a cgroup's files, the block column
# of a blocked design's frame).
GENERIC_KEYS = frozenset({"block", "cgroup", "iteration", "params", "pressure", "run", "trace"})
# Modules another branch of issue 31 rewrites (the knob sweep moves to study/sweep.py, the
# models' validation recipes are unified): they read vm.json and mmlab.json directly until
# that branch routes them through capture_meta (the_vm_below, read_iteration,
# VmRecord.knobs and deferral_divisors, IterationMeta.workers ...). Each must still break a
# rule here, so that one fixed is taken off the list.
PENDING_METADATA: dict[str, str] = {}
PENDING_COMMANDS: dict[str, str] = {}


def sources() -> dict[str, str]:
    """Every module of the package: path relative to the repository → source."""
    return {str(p.relative_to(REPO)): p.read_text() for p in sorted(PACKAGE.rglob("*.py"))}


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of ``tree`` (prose, which may name a file)."""
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            found.add(id(first.value))
    return found


def file_name_literals(files: Mapping[str, str], names: tuple[str, ...]) -> list[str]:
    """``module:line: literal`` of every string in code (a docstring is prose) that is a
    path ending in one of ``names``: ``"vm.json"``, ``"iter-*/mmlab.json"``, the
    ``"/boot.json"`` of an f-string. A message with spaces names the file, not a path."""
    out = []
    for module, text in files.items():
        tree = ast.parse(text)
        prose = _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            value = node.value
            path_like = not any(c.isspace() for c in value)
            if id(node) not in prose and path_like and value.endswith(names):
                out.append(f"{module}:{node.lineno}: {value!r}")
    return out


def key_reads(files: Mapping[str, str], keys: frozenset[str]) -> list[str]:
    """``module:line: key`` of every ``x["key"]`` and ``x.get("key", ...)`` of ``keys``."""
    out = []
    for module, text in files.items():
        for node in ast.walk(ast.parse(text)):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                key = node.slice.value
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "get"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                key = node.args[0].value
            if isinstance(key, str) and key in keys:
                out.append(f"{module}:{node.lineno}: {key}")
    return out


def metadata_keys() -> frozenset[str]:
    """The top-level keys of every bundled mmlab.json, vm.json and boot.json, less the
    generic words."""
    if not DATA.is_dir():
        pytest.skip("the bundled captures are not here")
    keys: set[str] = set()
    for name in METADATA_FILES:
        for path in DATA.rglob(name):
            keys |= set(json.loads(path.read_text()))
    return frozenset(keys - GENERIC_KEYS)


def _modules(found: list[str]) -> set[str]:
    return {line.split(":", 1)[0] for line in found}


def test_only_capture_meta_names_the_metadata_files():
    files = {m: t for m, t in sources().items() if m != CAPTURE_META}
    found = file_name_literals(files, METADATA_FILES)
    assert _modules(found) <= set(PENDING_METADATA), found


def test_only_capture_meta_reads_metadata_keys():
    keys = metadata_keys()
    assert {"sysctls_vm_before", "guest_boot_id", "knob_check", "run_id"} <= keys
    files = {m: t for m, t in sources().items() if m != CAPTURE_META and not m.startswith(WRITERS)}
    found = key_reads(files, keys)
    assert _modules(found) <= set(PENDING_METADATA), found


def test_pending_metadata_readers_still_read_it():
    files = {m: t for m, t in sources().items() if m in PENDING_METADATA}
    found = file_name_literals(files, METADATA_FILES) + key_reads(files, metadata_keys())
    assert _modules(found) == set(PENDING_METADATA), "take a fixed module off PENDING_METADATA"


def test_the_metadata_scans_find_what_they_must():
    planted = {
        "a.py": 'p = run / "vm.json"\n',
        "b.py": 'x = sorted(d.glob("iter-*/mmlab.json"))\n',
        "c.py": 'y = f"{it}/boot.json"\n',
        "d.py": '"""Reads vm.json."""\nraise E(p, "no mmlab.json here")\n',
    }
    found = file_name_literals(planted, METADATA_FILES)
    assert [f.split(":")[:2] for f in found] == [["a.py", "1"], ["b.py", "1"], ["c.py", "1"]]
    reads = {"e.py": 'a = vm["guest_boot_id"]\nb = m.get("sysctl_changes", {})\nc = d["run"]\n'}
    keys = frozenset({"guest_boot_id", "sysctl_changes"})
    assert key_reads(reads, keys) == ["e.py:1: guest_boot_id", "e.py:2: sysctl_changes"]


def grid_parsers(files: Mapping[str, str]) -> dict[str, set[str]]:
    """Module → what it parses a grid or YAML with: ``read_grid`` called, ``yaml`` imported."""
    out: dict[str, set[str]] = {}
    for module, text in files.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "read_grid":
                out.setdefault(module, set()).add("read_grid")
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if "yaml" in names:
                out.setdefault(module, set()).add("yaml")
    return out


def test_one_grid_parser_for_both_sweeps():
    # The grid's reader is called by the two sweeps alone; the other YAML read in the package
    # is another format each: an experiment plan, mmtests' shellpack.yaml, one -p value.
    assert grid_parsers(sources()) == {
        "analysis/ingest/grid.py": {"yaml"},
        "analysis/models/sweep.py": {"read_grid"},
        "analysis/notebooks/sweep.py": {"read_grid"},
        "analysis/capture/design.py": {"yaml"},
        "analysis/ingest/mmtests_shellpack.py": {"yaml"},
        "analysis/commands/notebook.py": {"yaml"},
    }
    planted = {"x.py": "import yaml\npoints = read_grid(path)\n"}
    assert grid_parsers(planted) == {"x.py": {"yaml", "read_grid"}}


def test_the_grammars_examples_are_grids(tmp_path):
    """Every YAML example of docs/sweeps.md reads as the points it says."""
    from analysis.ingest.grid import read_grid

    text = (REPO / "docs" / "sweeps.md").read_text()
    blocks, block = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("    "):
            block.append(line[4:])
        elif block:
            blocks.append("\n".join(block) + "\n")
            block = []
    points = []
    for i, yaml in enumerate(blocks):
        (tmp_path / f"{i}.yaml").write_text(yaml)
        points.append(read_grid(tmp_path / f"{i}.yaml"))
    pairs, throttle, windows = points
    assert [p["target"] for p in pairs] == ["data/vm-6.12/wb20", "data/vm-6.12/wb500"]
    assert throttle == [{"capture": "data/stutterp-dirty20", "tau_us": t} for t in (10000, 50000)]
    assert len(windows) == 10
    assert [p["timeline_window_s"] for p in windows[:5]] == pytest.approx([0.5, 1, 2, 4, 8])


# Layers a command calls; `mmlab ingest` also calls the ingest layer, its subject.
COMMAND_CALLS = (
    "errors",
    "outputs",
    "capture",
    "models",
    "study",
    "notebooks",
    "report",
    "commands",
)
COMMAND_SUBJECT = {"analysis.commands.ingest": "ingest"}
NUMERIC = frozenset({"numpy", "polars", "pyarrow", "scipy", "statsmodels", "pandas"})
MAX_COMPLEXITY = 10


def complexity(function: ast.AST) -> int:
    """McCabe's count of a function: 1 + its branches (if, loop, except, case, each
    comprehension's for and if, each extra operand of and/or, a conditional expression)."""
    n = 1
    for node in ast.walk(function):
        branch = ast.If | ast.IfExp | ast.For | ast.While | ast.ExceptHandler | ast.match_case
        if isinstance(node, branch):
            n += 1
        elif isinstance(node, ast.BoolOp):
            n += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            n += 1 + len(node.ifs)
    return n


def command_violations(files: Mapping[str, str]) -> list[str]:
    """``module:line: why`` of every import a command must not make and every function of
    it above :data:`MAX_COMPLEXITY`."""
    out = []
    for path, text in files.items():
        module = path.removesuffix(".py").replace("/", ".")
        allowed = {*COMMAND_CALLS, COMMAND_SUBJECT.get(module, "")} - {""}
        for node in ast.walk(ast.parse(text)):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                # ``from analysis import study`` imports the module analysis.study
                base = node.module
                names = [f"{base}.{a.name}" for a in node.names] if base == "analysis" else [base]
            for name in names:
                top, _, rest = name.partition(".")
                if top in NUMERIC or (top == "analysis" and rest.split(".")[0] not in allowed):
                    out.append(f"{path}:{node.lineno}: imports {name}")
            function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if function and (n := complexity(node)) > MAX_COMPLEXITY:
                out.append(f"{path}:{node.lineno}: {node.name} has complexity {n}")
    return out


def _commands() -> dict[str, str]:
    return {m: t for m, t in sources().items() if m.startswith("analysis/commands/")}


def test_no_command_computes():
    found = command_violations(_commands())
    assert _modules(found) <= set(PENDING_COMMANDS), found


def test_pending_commands_still_compute():
    found = command_violations({m: t for m, t in _commands().items() if m in PENDING_COMMANDS})
    assert _modules(found) == set(PENDING_COMMANDS), "take a fixed module off PENDING_COMMANDS"


def test_the_command_scan_finds_what_it_must():
    branches = "".join(f"    if a == {i}:\n        return {i}\n" for i in range(MAX_COMPLEXITY))
    planted = {
        "analysis/commands/a.py": "from analysis.stats.fit import fit_group\nimport polars\n",
        "analysis/commands/b.py": f"def run(a):\n{branches}    return 0\n",
        "analysis/commands/ingest.py": "from analysis.ingest import ftrace\n",
        "analysis/commands/c.py": "from analysis.ingest import grid\nfrom analysis import study\n",
    }
    assert command_violations(planted) == [
        "analysis/commands/a.py:1: imports analysis.stats.fit",
        "analysis/commands/a.py:2: imports polars",
        f"analysis/commands/b.py:1: run has complexity {MAX_COMPLEXITY + 1}",
        "analysis/commands/c.py:1: imports analysis.ingest",
    ]
    # A comprehension with a condition and an and/or count as branches.
    (f,) = ast.parse("def f(x):\n    return [a for a in x if a and a > 1 or a < -1]\n").body
    assert complexity(f) == 5
