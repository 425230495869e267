"""``mmlab stalls`` end to end: histogram text detected by content, JSON keys, bad input."""

from __future__ import annotations

import json

import pytest

from analysis.cli import main

SEED = "000_901e324e43c5b0b5.txt"


def test_json_on_seed_histogram(seeds_dir, capsys):
    assert main(["stalls", str(seeds_dir / SEED), "--json", "--label", "2=kswapd"]) == 0
    (result,) = json.loads(capsys.readouterr().out)
    assert result["input_kind"] == "histogram"
    kswapd = [t for t in result["throttle"] if t["context"] == "kswapd"]
    assert len(kswapd) == 1
    row = kswapd[0]
    assert {
        "reason",
        "usec_timeout",
        "context",
        "count",
        "zero_share",
        "timeout_share",
        "mean_usec",
    } <= set(row)
    assert (row["count"], row["usec_timeout"]) == (244, 100000)
    assert row["timeout_share"] == pytest.approx(11 / 244)
    assert result["hz"]["hz"] == 250.0
    assert result["direct_reclaim"] is None  # a histogram has no begin/end pairs


def test_text_fits_80_columns(seeds_dir, capsys):
    assert main(["stalls", str(seeds_dir / SEED)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_uniq_view_has_the_seed_shape(seeds_dir, capsys):
    # The uniq -c lines are the seed's own (wider than 80 columns there too), with the
    # right-censored rows marked.
    assert main(["stalls", str(seeds_dir / SEED), "--uniq"]) == 0
    out = capsys.readouterr().out
    seed_line = "  51305 usec_timeout=500000 usect_delayed=500000 reason=VMSCAN_THROTTLE_NOPROGRESS"
    assert seed_line + " >=" in out
    assert "   6520 usec_timeout=20000 usect_delayed=0 reason=VMSCAN_THROTTLE_ISOLATED\n" in out


def test_bad_input_is_one_line(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["stalls", str(empty)]) == 2
    assert "no ftrace-* file" in capsys.readouterr().err
    mail = tmp_path / "mail.txt"
    mail.write_text("  12 usect_delayed=0 reason=VMSCAN_THROTTLE_ISOLATED\n")
    assert main(["stalls", str(mail), "--label", "4=direct"]) == 2
    assert "do not exist" in capsys.readouterr().err
