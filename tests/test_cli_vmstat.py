"""`mmlab vmstat` on files: JSON contract, text width, and user errors without tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from analysis.cli import main

BEFORE = (
    "nr_free_pages 1\npgscan_kswapd 100\npgsteal_kswapd 40\npgscan_direct 0\npgsteal_direct 0\n"
)
AFTER = (
    "nr_free_pages 1\npgscan_kswapd 300\npgsteal_kswapd 140\npgscan_direct 50\npgsteal_direct 5\n"
)


def test_pair_json_has_metrics_and_elapsed(tmp_path, capsys):
    (tmp_path / "a").write_text(BEFORE)
    (tmp_path / "b").write_text(AFTER)
    assert (
        main(["vmstat", str(tmp_path / "a"), str(tmp_path / "b"), "--elapsed", "4", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["metrics"]["Kswapd efficiency %"] == pytest.approx(50.0)
    assert out["metrics"]["Direct velocity"] == pytest.approx(12.5)
    assert out["metrics"]["Percentage direct scans"] == pytest.approx(20.0)
    assert (out["elapsed_s"], out["elapsed_source"]) == (4.0, "command line")
    assert out["units"]["Kswapd velocity"] == "pages/s"


def test_text_table_fits_80_columns_and_footnotes_missing_values(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").write_text(BEFORE)
    (tmp_path / "b").write_text(AFTER)
    assert main(["vmstat", "a", "b"]) == 0
    text = capsys.readouterr().out
    assert max(map(len, text.splitlines())) <= 80
    assert "Kswapd velocity pages/s" in text
    assert "elapsed time unknown: pass --elapsed" in text


def test_monitor_intervals(tmp_path, capsys):
    log = "".join(f"time: {t}\n{d}" for t, d in [(10, BEFORE), (11, AFTER), (13, AFTER)])
    (tmp_path / "m").write_text(log)
    assert main(["vmstat", str(tmp_path / "m"), "--intervals", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["elapsed_source"] == "vmstat sample span"
    assert [r["Kswapd pages scanned"] for r in out["intervals"]] == [200, 0]


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        (b"", "empty file"),
        (b"\x00\x01garbage", "binary content"),
        (b"pgscan_kswapd 1\n", "one snapshot"),
    ],
)
def test_user_errors_are_one_line_exit_2(tmp_path, content, expect):
    path = tmp_path / "bad"
    path.write_bytes(content)
    proc = subprocess.run(
        [sys.executable, "-m", "analysis.cli", "vmstat", str(path)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert expect in proc.stderr and str(path) in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_missing_file_is_a_user_error(tmp_path, capsys):
    assert main(["vmstat", str(tmp_path / "nope")]) == 2
    assert "nope" in capsys.readouterr().err


def _real_snapshots(tmp_path):
    """/proc/vmstat before and after iteration 0 of data/stutterp-dirty20 (a real 6.18
    kernel), each written as a plain /proc/vmstat file."""
    from analysis.ingest import vmstat
    from tests.conftest import DATA

    samples = vmstat.read(DATA / "stutterp-dirty20" / "dirty20" / "iter-0" / "tests-sysstate")
    paths = []
    for i, name in enumerate(("before", "after")):
        row = samples.frame.drop("epoch_s").row(i, named=True)
        paths.append(tmp_path / name)
        paths[-1].write_text("".join(f"{k} {v}\n" for k, v in row.items() if v is not None))
    return paths


def test_swapped_snapshots_are_one_question(tmp_path, capsys):
    """Issue 17: AFTER BEFORE gave 25 "counter went down" lines; now one line, exit 2."""
    before, after = _real_snapshots(tmp_path)
    assert main(["vmstat", str(before), str(after), "--json"]) == 0
    capsys.readouterr()
    assert main(["vmstat", str(after), str(before)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert f"was {before} taken before {after}?" in captured.err


def test_a_second_directory_is_refused(tmp_path, capsys):
    """Issue 17: `vmstat DIR DIR` silently ignored the second path."""
    from tests.conftest import DATA

    runs = [str(DATA / "stutterp-dirty20"), str(DATA / "stutterp-dirty5")]
    assert main(["vmstat", *runs]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "use mmlab compare-vmstat" in err
