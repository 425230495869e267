"""The paper's shrinker section: the replay check recomputed from the raw trace text, and
seed 001's worked example against the hand arithmetic of docs/shrinker-deferral.md."""

from __future__ import annotations

import dataclasses
import re

import pytest
import zstandard

from analysis.ingest.mmtests import find_runs
from analysis.report.paper import shrinker
from analysis.seeds.shrinker import seed_divisors, seed_example
from analysis.study.shrinker import DIVISORS
from analysis.study.study import Study
from tests.conftest import DATA, REPO

PROSE = REPO / "papers" / "reclaim-throttling" / "sections" / "ab-shrinker.tex"

_START = re.compile(
    r"mm_shrink_slab_start: .*objects to shrink (\d+) .*cache items (\d+) delta (\d+) "
    r"total_scan (\d+) priority (\d+)"
)


@pytest.fixture(scope="module")
def one_trace():
    """The first iteration of the A/B partner run: its trace has per-memcg chain misses."""
    (run,) = find_runs(DATA / "stutterp-ab-dirty5")
    run = dataclasses.replace(run, iterations=run.iterations[:1])
    return run, Study((run,)).shrinker


def _start_lines(iteration_dir) -> list[tuple[int, ...]]:
    raw = (iteration_dir / "ftrace-stutterp.zst").read_bytes()
    text = zstandard.ZstdDecompressor().stream_reader(raw).read().decode()
    return [tuple(map(int, m.groups())) for m in map(_START.search, text.splitlines()) if m]


def test_replay_check_matches_the_raw_trace(one_trace):
    run, replays = one_trace
    lines = _start_lines(run.iterations[0].path)
    # G3 (docs/shrinker-deferral.md): total_scan = min((nr >> priority) + delta, 2 freeable).
    g3 = sum(min((nr >> p) + d, 2 * f) == t for nr, f, d, t, p in lines)
    (row,) = replays.checks.iter_rows(named=True)
    assert row["calls"] == len(lines) > 1000
    assert row["matched"] == g3 == len(lines)
    assert row["rule"] == "G3" and row["max_freeable"] == max(f for _, f, *_ in lines)
    assert row["chain_matched"] < row["chain_total"]  # the per-memcg counters it cannot see
    assert set(replays.rules["rule"]) == {"G1", "G2", "G3"}
    assert replays.sweep.height == len(DIVISORS)


def test_seed_example_is_the_hand_worked_arithmetic():
    rows = {(r["rule"], r["context"]): r for r in seed_example()}
    # docs/shrinker-deferral.md, "Worked example": 1.8 M freeable, priority 12, 1 M deferred.
    assert rows["G1", "any"]["delta"] == (1_800_000 >> 12) * 4 // 2 == 878
    assert rows["G1", "any"]["target"] == min(1_000_000 + 878, 1_800_000 // 2) == 900_000
    assert rows["G1", "any"]["mail"] == "900,000"
    assert rows["G2", "kswapd"]["target"] == 878 + 1_000_000 // 12 == 84_211
    assert rows["G2", "direct"]["target"] == 878
    assert rows["G3", "any"]["target"] == (1_000_000 >> 12) + 878 == 1_122
    # G3 scans whole batches of 1024 (superblock shrinker) and defers nr + delta - scanned.
    assert rows["G3", "any"]["scanned"] == 1024
    assert rows["G3", "any"]["counter_after"] == 1_000_000 + 878 - 1024
    for r in rows.values():
        assert r["target"] == r["arithmetic"]


def test_section_defines_every_macro_it_uses(one_trace, tmp_path):
    run, _ = one_trace
    tex = shrinker.section(Study((run,)), tmp_path)
    defined = set(re.findall(r"\\newcommand\{\\(\w+)\}", tex))
    used = set(re.findall(r"\\(Shr\w+)\{\}", PROSE.read_text()))
    assert used and used == defined, (used - defined, defined - used)
    assert (tmp_path / "figures" / "shrinker-divisors.pdf").stat().st_size > 1000
    seed = (tmp_path / "tables" / "shrinker-seed.tex").read_text()
    assert "{84{,}211}" in seed and "{1{,}122}" in seed


def test_seed_divisor_sweep_is_the_hand_arithmetic():
    rows = {(r["divisor"], r["quantity"]): r["objects"] for r in seed_divisors((2,)).to_dicts()}
    # Divisor 2: target 1,000,000 // 2 + 878 = 500,878, scanned in whole batches of 1024.
    assert rows[2, "scanned by the call"] == 500_878 // 1024 * 1024 == 500_736
    assert rows[2, "left deferred"] == 1_000_000 + 878 - 500_736


def test_runs_without_shrinker_calls_say_so(tmp_path):
    assert Study(()).shrinker is None
    assert "nothing to replay" in shrinker.section(Study(()), tmp_path)
