"""sysctls under /proc/sys: read all ``vm.*``, set some, and put back exactly what was changed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from analysis.errors import InputError

__all__ = ["PROC_SYS", "SysctlChanger", "parse_assignment", "read_tree", "sysctl_path"]

PROC_SYS = Path("/proc/sys")


def parse_assignment(text: str, option: str = "--set") -> tuple[str, str]:
    """Split ``vm.dirty_ratio=5`` into ``("vm.dirty_ratio", "5")``; bad text is an InputError
    naming ``option``."""
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if not sep or not name or not value or "/" in name or ".." in name:
        raise InputError(option, f"expected NAME=VALUE like vm.dirty_ratio=5, got {text!r}")
    return name, value


def sysctl_path(name: str, root: Path = PROC_SYS) -> Path:
    """``vm.dirty_ratio`` -> ``/proc/sys/vm/dirty_ratio``."""
    return root.joinpath(*name.split("."))


def read_tree(prefix: str = "vm", root: Path = PROC_SYS) -> dict[str, str]:
    """Every readable sysctl under ``prefix`` (e.g. all ``vm.*``) as whitespace-normalised text."""
    out: dict[str, str] = {}
    base = sysctl_path(prefix, root)
    for f in sorted(base.rglob("*")):
        if not f.is_file():
            continue
        try:
            text = f.read_text()
        except OSError:
            # Write-only knobs (vm.drop_caches, vm.compact_memory) cannot be read.
            continue
        name = ".".join(f.relative_to(root).parts)
        out[name] = " ".join(text.split())
    return out


@dataclass
class SysctlChanger:
    """Sets sysctls and remembers each one's first value so :meth:`restore` undoes them all.

    ``before_first_change(name)`` runs before a sysctl is first written: the capture's
    on-disk journal records the original there, so a SIGKILL cannot lose it.
    """

    root: Path = PROC_SYS
    saved: dict[str, str] = field(default_factory=dict)
    before_first_change: Callable[[str], None] = lambda name: None

    def set(self, name: str, value: str) -> None:
        path = sysctl_path(name, self.root)
        if not path.is_file():
            raise InputError(path, f"no such sysctl {name}")
        if name not in self.saved:
            self.before_first_change(name)
            self.saved[name] = path.read_text().strip()
        path.write_text(value)

    def restore(self) -> None:
        """Write back every saved value (most recent first) and forget them."""
        for name, value in reversed(list(self.saved.items())):
            sysctl_path(name, self.root).write_text(value)
        self.saved.clear()
