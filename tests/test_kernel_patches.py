"""The two kernel patch series give the same knobs.

``kernels/patches/`` (Debian's 6.12, what ``make kernels`` builds) and
``kernels/patches-mainline/`` (kernels whose mm/vmscan.c has ``vmscan_sysctl_table``)
differ only in where the throttle sysctls are registered, not in what a knob is: the same
procnames, handlers, bounds and defaults, the same deferral code and the same
documentation. The names are the ones the capture sets (:mod:`analysis.capture.knobs`).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from analysis.capture.knobs import DIVISOR_KNOB, THROTTLE_KNOBS
from tests.conftest import REPO

SERIES = {"6.12": REPO / "kernels/patches", "mainline": REPO / "kernels/patches-mainline"}


def _changed_lines(series: Path, sign: str) -> dict[str, list[str]]:
    """The lines a series adds (``sign`` "+") or removes ("-"), per file, in order."""
    patches = sorted(series.glob("*.patch"))
    if len(patches) != 2:
        raise AssertionError(f"{series}: expected the two knob patches, found {patches}")
    lines: dict[str, list[str]] = {}
    for patch in patches:
        path = None
        for line in patch.read_text().splitlines():
            if line.startswith("diff --git a/"):
                path = line.split(" b/", 1)[1]
                lines.setdefault(path, [])
            elif path and line.startswith(sign) and not line.startswith(sign * 3):
                lines[path].append(line[1:])
    return lines


def _entry_fields(lines: list[str]) -> Counter[str]:
    """The ctl_table entry fields and timeout defaults among added lines."""
    field = re.compile(r"\s*(\.(procname|data|maxlen|mode|proc_handler|extra1|extra2)\b|\[VMSCAN_)")
    wanted = [ln.strip() for ln in lines if field.match(ln)]
    wanted += [ln.strip() for ln in lines if "reclaim_throttle_max_jiffies =" in ln]
    return Counter(wanted)


@pytest.mark.parametrize("name", sorted(SERIES))
def test_series_define_the_knobs_the_capture_sets(name):
    added = _changed_lines(SERIES[name], "+")
    procnames = {
        m.group(1)
        for lines in added.values()
        for ln in lines
        if (m := re.match(r'\s*\.procname\s*=\s*"([^"]+)"', ln))
    }
    knobs = {k.removeprefix("vm.") for k in [*THROTTLE_KNOBS, DIVISOR_KNOB]}
    assert procnames == knobs


def test_throttle_entries_and_defaults_are_the_same():
    old, new = (_changed_lines(SERIES[n], "+")["mm/vmscan.c"] for n in ("6.12", "mainline"))
    assert _entry_fields(new) == _entry_fields(old)
    # four entries with seven fields, four defaults and the ten-second cap
    assert sum(_entry_fields(new).values()) == 4 * 7 + 4 + 1


def test_mainline_throttle_entries_join_vmscan_sysctl_table():
    added = _changed_lines(SERIES["mainline"], "+")["mm/vmscan.c"]
    assert not any("register_sysctl" in ln or "struct ctl_table" in ln for ln in added)
    patch = next(SERIES["mainline"].glob("0001-*.patch")).read_text()
    assert "@@ static const struct ctl_table vmscan_sysctl_table[] = {" in patch


def test_removed_lines_are_the_same():
    old, new = (_changed_lines(SERIES[n], "-") for n in ("6.12", "mainline"))
    assert new == old


def test_shrinker_change_and_documentation_are_the_same():
    old, new = (_changed_lines(SERIES[n], "+") for n in ("6.12", "mainline"))
    # mainline's vm sysctl tables are const; nothing else of mm/shrinker.c differs
    unconst = [
        ln.replace("static const struct ctl_table", "static struct ctl_table")
        for ln in new["mm/shrinker.c"]
    ]
    assert unconst == old["mm/shrinker.c"]
    assert new["mm/shrinker.c"] != old["mm/shrinker.c"]
    doc = "Documentation/admin-guide/sysctl/vm.rst"
    assert new[doc] == old[doc]
