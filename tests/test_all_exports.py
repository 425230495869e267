"""Every name one module imports from another ``analysis`` module is in that module's
``__all__``: the public surface is declared where it lives, so a rename is seen."""

from __future__ import annotations

import ast
import importlib
import importlib.util

from tests.conftest import REPO

SCANNED = ("analysis", "tests", "notebooks", "benchmarks")


def _imports() -> dict[str, set[str]]:
    """``from analysis.x import a, b`` in every scanned file → {"analysis.x": {"a", "b"}}."""
    found: dict[str, set[str]] = {}
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("analysis"):
                    names = {alias.name for alias in node.names}
                    found.setdefault(node.module, set()).update(names)
    return found


def _is_submodule(package: str, name: str) -> bool:
    """``from analysis.report import ops`` imports a module, not an exported name."""
    return hasattr(importlib.import_module(package), "__path__") and (
        importlib.util.find_spec(f"{package}.{name}") is not None
    )


def test_every_imported_name_is_exported():
    missing = []
    for module_name, names in sorted(_imports().items()):
        module = importlib.import_module(module_name)
        public = set(getattr(module, "__all__", ()))
        missing += [
            f"{module_name}.{name}"
            for name in sorted(names)
            if name not in public and not _is_submodule(module_name, name)
        ]
    assert missing == []


def test_the_scan_sees_imports():
    # The check above is only as good as the scan: it must see a known import.
    assert "format_comparison" in _imports()["analysis.report.ops"]


def test_every_module_declares_its_exports():
    # Package __init__ files only describe their package; every other module says what it offers.
    modules = [p for p in (REPO / "analysis").rglob("*.py") if p.name != "__init__.py"]
    assert [str(p.relative_to(REPO)) for p in modules if "__all__" not in p.read_text()] == []
