"""sysctls under /proc/sys: read all ``vm.*``, check and set some, and put back exactly what
was changed, coupled pairs included."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from analysis.errors import InputError

__all__ = [
    "COUPLED",
    "PROC_SYS",
    "SysctlChanger",
    "check_assignment",
    "coupled_group",
    "parse_assignment",
    "read_tree",
    "restore_group",
    "sysctl_path",
]

PROC_SYS = Path("/proc/sys")
# Pairs the kernel couples (mm/page-writeback.c): dirty_bytes_handler() zeroes
# vm_dirty_ratio, dirty_ratio_handler() zeroes vm_dirty_bytes, and the background pair
# likewise. Only the non-zero member is in force, and 0 cannot be written to a *_bytes
# (its minimum is 2 pages, resp. 1), so a pair is saved and restored as one.
COUPLED = {
    "vm.dirty_bytes": "vm.dirty_ratio",
    "vm.dirty_ratio": "vm.dirty_bytes",
    "vm.dirty_background_bytes": "vm.dirty_background_ratio",
    "vm.dirty_background_ratio": "vm.dirty_background_bytes",
}


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


def coupled_group(name: str) -> tuple[str, ...]:
    """``name`` and the twin the kernel zeroes when it is written (:data:`COUPLED`)."""
    twin = COUPLED.get(name)
    return (name, twin) if twin else (name,)


def _read(name: str, root: Path) -> str:
    return " ".join(sysctl_path(name, root).read_text().split())


def check_assignment(name: str, value: str, root: Path = PROC_SYS, option: str = "--set") -> None:
    """What can be known before writing: the sysctl exists, is writable (its mode: procfs
    gives root only the owner bits) and ``value`` has its shape (as many integers as it
    holds, when it holds integers); a *_bytes of :data:`COUPLED` is not 0. The kernel's own
    range check comes with the write itself. An InputError naming ``option`` and the sysctl."""
    path = sysctl_path(name, root)
    if not path.is_file():
        raise InputError(option, f"no such sysctl {name} ({path})")
    if not path.stat().st_mode & 0o200:
        raise InputError(option, f"{name} is read-only ({path})")
    current = _read(name, root).split()
    wanted = value.split()
    numeric = all(v.lstrip("-").isdigit() for v in current)
    if (
        current
        and numeric
        and (len(wanted) != len(current) or not all(v.lstrip("-").isdigit() for v in wanted))
    ):
        shape = "an integer" if len(current) == 1 else f"{len(current)} integers"
        raise InputError(option, f"{name}={value}: expected {shape} (it holds {' '.join(current)})")
    if name.endswith("_bytes") and name in COUPLED and wanted == ["0"]:
        raise InputError(
            option,
            f"{name}=0: the kernel refuses 0; set {COUPLED[name]} instead (writing it zeroes "
            f"{name})",
        )


def _in_force(originals: dict[str, str]) -> tuple[str, str]:
    """The member of a saved group to write back: the non-zero one (writing it zeroes its
    twin), else the ``_ratio`` one (a ratio takes 0, a byte count does not)."""
    for n, v in originals.items():
        if v.split() != ["0"]:
            return n, v
    return next((n, v) for n, v in originals.items() if n.endswith("_ratio") or len(originals) == 1)


def restore_group(originals: dict[str, str], root: Path = PROC_SYS) -> str | None:
    """Put back a sysctl, or a coupled pair, saved as ``{name: original}``; the line to
    report, or None when every member already holds its original."""
    now = {n: _read(n, root) for n in originals}
    if all(now[n] == " ".join(v.split()) for n, v in originals.items()):
        return None
    name, value = _in_force(originals)
    sysctl_path(name, root).write_text(value)
    names = "/".join(originals)
    return (
        f"restored {names} to {'/'.join(originals.values())} (was left at {'/'.join(now.values())})"
    )


@dataclass
class SysctlChanger:
    """Sets sysctls and remembers each one's first value (and its coupled twin's) so
    :meth:`restore` undoes them all.

    ``before_first_change(name)`` runs before a sysctl (or its twin) is first written: the
    capture's on-disk journal records the originals there, so a SIGKILL cannot lose them.
    A write the kernel refuses is an InputError naming the sysctl and the value.
    """

    root: Path = PROC_SYS
    saved: dict[str, str] = field(default_factory=dict)
    before_first_change: Callable[[str], None] = lambda name: None
    option: str = "--set"

    def set(self, name: str, value: str) -> None:
        check_assignment(name, value, self.root, self.option)
        group = coupled_group(name)
        if not any(n in self.saved for n in group):
            self.before_first_change(name)
            for n in group:
                if sysctl_path(n, self.root).is_file():
                    self.saved[n] = _read(n, self.root)
        try:
            sysctl_path(name, self.root).write_text(value)
        except OSError as exc:
            raise InputError(
                self.option, f"{name}={value}: the kernel refused it ({exc.strerror})"
            ) from None

    def restore(self) -> None:
        """Write back every saved value or pair (most recent first) and forget them."""
        names = list(self.saved)
        groups: list[tuple[str, ...]] = []
        for n in names:
            group = tuple(m for m in coupled_group(n) if m in self.saved)
            if set(group) not in [set(g) for g in groups]:
                groups.append(group)
        for group in reversed(groups):
            restore_group({n: self.saved[n] for n in group}, self.root)
        self.saved.clear()
