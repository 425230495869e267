"""``mmlab model shrinker`` on a bundled real capture, and its bad-input errors."""

from __future__ import annotations

import json
import math

import pytest

from analysis.cli import main
from analysis.models import shrinker as model
from tests.conftest import DATA
from tests.test_cli_imports import _probe

# The smallest bundled capture (Linux 6.18, G3): 26,150 shrink_slab calls, all memcg reclaim.
TRACE = DATA / "stutterp-dirty5" / "dirty5" / "iter-2" / "ftrace-stutterp.zst"


def test_capturing_rule_reproduces_every_total_scan(capsys):
    assert main(["model", "shrinker", str(TRACE), "--json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)
    assert (run["capturing_generation"], run["generation_source"]) == ("G3", "Linux 6.18")
    assert run["replay_agreement"] == {"matched": 26_150, "total": 26_150, "share": 1.0}
    # The capture scanned nothing, and neither does its own rule replayed.
    assert run["observed"] == {
        "scanned_objects": 0,
        "freed_objects": 0,
        "replayed_scanned_objects": 0,
    }
    assert run["outputs"]["efficiency"] is None
    assert [w["context"] for w in run["work"]] == ["direct", "kswapd"]


def test_invocations_carry_identity_and_gfp():
    calls = model.load_invocations(TRACE)
    # Counted with grep on the raw trace: 401 start lines print gfp_flags GFP_NOFS, and
    # the two super_block shrinkers have 26,111 and 39 calls.
    assert int(model.blocked_calls(calls).sum()) == 401
    counts = dict(calls.group_by("shrinker_ptr").len().iter_rows())
    assert counts == {"0000000057ada3c1": 26_111, "00000000cb7bcf64": 39}
    assert calls["end_line"].min() > calls["begin_line"].min()


def test_text_is_80_columns_and_says_what_is_unknown(capsys):
    assert main(["model", "shrinker", str(TRACE), "--generation", "G2", "--divisor", "10"]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "\x1b" not in text
    assert "replay_agreement: 26150/26150" in text
    assert "Variant: G2 d=10 literal" in text
    assert "no kswapd shrinker calls" in text


def test_sweep_model_matches_the_replay(tmp_path):
    point = model.SWEEP_MODEL({"trace": str(TRACE), "generation": "G1", "divisor": "1"})
    replayed = model.outputs(model.replay(model.load_invocations(TRACE), model.Variant("G1")))
    assert point.keys() == replayed.keys()
    assert all(
        math.isnan(v) if math.isnan(replayed[k]) else v == replayed[k] for k, v in point.items()
    )
    # G1 lets a caller with total_scan >= freeable scan the whole small cache: some work.
    assert point["scanned_objects"] > 0
    # The same calls saved as a table, shuffled: the model reads the table in trace order.
    table = tmp_path / "calls.parquet"
    model.load_invocations(TRACE).sample(fraction=1.0, shuffle=True, seed=1).write_parquet(table)
    saved = model.SWEEP_MODEL({"trace": str(table), "generation": "G1", "divisor": "1"})
    assert saved["scanned_objects"] == point["scanned_objects"]
    assert saved["backlog_max_objects"] == point["backlog_max_objects"]


def test_bad_input(tmp_path, capsys):
    trace = tmp_path / "no-shrinker.trace"
    trace.write_text(
        "  dd-100 [000] .... 1.000000: mm_vmscan_direct_reclaim_begin: order=0 "
        "gfp_flags=GFP_KERNEL\n"
        "  dd-100 [000] .... 1.000100: mm_vmscan_direct_reclaim_end: nr_reclaimed=5\n"
    )
    assert main(["model", "shrinker", str(trace)]) == 2
    assert "no mm_shrink_slab_start/end pairs" in capsys.readouterr().err
    for argv in (["--divisor", "0"], ["--divisor", "fast"], ["--generation", "G4"]):
        with pytest.raises(SystemExit) as exited:
            main(["model", "shrinker", str(TRACE), *argv])
        assert exited.value.code == 2
        assert "mmlab model shrinker: error" in capsys.readouterr().err


def test_model_help_does_not_import_numba():
    assert _probe(["model", "shrinker", "--help"]) == ["False", "False"]


def test_a_long_trace_path_stays_whole_within_80_columns(tmp_path, capsys):
    deep = tmp_path / ("a-long-directory-name-" * 3) / ("another-one-" * 4) / TRACE.name
    deep.parent.mkdir(parents=True)
    deep.write_bytes(TRACE.read_bytes())
    assert main(["model", "shrinker", str(deep)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80
    end = next(i for i, line in enumerate(lines) if line.startswith("capturing rule"))
    assert "".join(line.strip() for line in lines[1:end]) == str(deep)
