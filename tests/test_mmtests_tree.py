"""A hand-made mmtests results tree: two runs × two iterations, read and compared."""

from __future__ import annotations

import gzip
import json
import statistics

import pytest

from analysis.cli import main
from analysis.ingest import mmtests
from analysis.metrics.compare import change_pct, compare_runs
from analysis.metrics.ops import iteration_elapsed

# Per (run, iteration): kswapd scanned, kswapd reclaimed, elapsed seconds from `time ::`.
TREE = {
    ("vanilla", 0): (1000, 600, 10.0),
    ("vanilla", 1): (1400, 700, 20.0),
    ("patched", 0): (800, 600, 10.0),
    ("patched", 1): (1000, 700, 12.5),
}


def vmstat_dump(scanned: int, reclaimed: int) -> str:
    return (
        f"nr_free_pages 7\npgscan_kswapd {scanned}\npgsteal_kswapd {reclaimed}\npgscan_direct 0\n"
    )


@pytest.fixture
def work_log(tmp_path):
    """work/log/<run>/iter-<n>/ as mmtests leaves it (sysstate for vanilla, monitor for patched)."""
    root = tmp_path / "work" / "log"
    for (run, n), (scanned, reclaimed, elapsed) in TREE.items():
        it = root / run / f"iter-{n}"
        it.mkdir(parents=True)
        (it / "tests-timestamp").write_text(
            "test begin :: stutterp 1600000000\n"
            f"time :: stutterp 1.50 user 2.25 system {elapsed} elapsed\n"
            "test end :: stutterp 1600000100 0\n"
        )
        if run == "vanilla":
            (it / "tests-sysstate").write_text(
                "file start :: /proc/vmstat\n"
                + vmstat_dump(5, 5)
                + "file end :: /proc/vmstat\n"
                + vmstat_dump(5 + scanned, 5 + reclaimed)
            )
        else:
            mid = vmstat_dump(scanned // 2, reclaimed // 2)
            text = f"time: 1600000000\n{vmstat_dump(0, 0)}time: 1600000001\n{mid}"
            text += f"time: 1600000002\n{vmstat_dump(scanned, reclaimed)}"
            (it / "proc-vmstat-stutterp.gz").write_bytes(gzip.compress(text.encode()))
    return root


def test_find_runs_from_work_log_run_dir_and_iteration(work_log):
    runs = mmtests.find_runs(work_log)
    assert [r.name for r in runs] == ["patched", "vanilla"]
    assert [len(r.iterations) for r in runs] == [2, 2]
    assert [r.name for r in mmtests.find_runs(work_log / "vanilla")] == ["vanilla"]
    (single,) = mmtests.find_runs(work_log / "vanilla" / "iter-1")
    assert [it.index for it in single.iterations] == [1]


def test_timestamps_and_elapsed_from_time_line(work_log):
    it = mmtests.find_runs(work_log / "vanilla")[0].iterations[1]
    t = it.times["stutterp"]
    assert (t.begin_epoch, t.end_epoch, t.rc) == (1600000000, 1600000100, 0)
    assert (t.user_s, t.system_s, t.elapsed_s) == (1.5, 2.25, 20.0)
    assert iteration_elapsed(it, "stutterp").source == "tests-timestamp time ::"


def test_gnu_time_clock_format(tmp_path):
    path = tmp_path / "tests-timestamp"
    path.write_text("time :: x 0.49user 0.53system 1:02:03.50elapsed 62%CPU\n")
    assert mmtests.read_timestamps(path)["x"].elapsed_s == pytest.approx(3723.5)


def test_comparison_keeps_every_iteration_mean_sd_and_mmtests_sign(work_log):
    runs = tuple(sorted(mmtests.find_runs(work_log), key=lambda r: r.name != "vanilla"))
    cmp = compare_runs(runs)
    assert cmp.runs == ("vanilla", "patched")
    eff_v = cmp.row("Kswapd efficiency %", "vanilla")
    eff_p = cmp.row("Kswapd efficiency %", "patched")
    assert eff_v.values == pytest.approx((60.0, 50.0))
    assert eff_v.mean == pytest.approx(55.0)
    assert eff_v.sd == pytest.approx(statistics.stdev([60.0, 50.0]))
    assert eff_p.values == pytest.approx((75.0, 70.0))
    # Higher efficiency is better: 72.5*100/55 - 100 = +31.82 %.
    assert eff_p.change_pct == pytest.approx(72.5 * 100 / 55 - 100)
    vel_v = cmp.row("Kswapd velocity", "vanilla")
    vel_p = cmp.row("Kswapd velocity", "patched")
    assert vel_v.values == pytest.approx((100.0, 70.0))  # 1000/10, 1400/20
    assert vel_p.values == pytest.approx((80.0, 80.0))  # 800/10, 1000/12.5
    # Lower velocity counts as better: 100 - 80*100/85 = +5.88 %.
    assert vel_p.change_pct == pytest.approx(100 - 80 * 100 / 85)
    assert vel_p.sd == 0 and vel_p.n == 2
    assert eff_v.change_pct == 0.0 and vel_v.change_pct == 0.0  # the base column


def test_change_pct_sign_convention():
    assert change_pct(100, 80, "lower") == pytest.approx(20)
    assert change_pct(100, 80, "higher") == pytest.approx(-20)
    assert change_pct(0, 80, "higher") is None


def test_cli_compare_vmstat_text_fits_80_columns_and_json(work_log, capsys, monkeypatch):
    monkeypatch.chdir(work_log)
    assert main(["compare-vmstat", "vanilla", "patched"]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "Kswapd efficiency %" in text and "±" in text
    # Rows that are zero everywhere are listed once, not printed as tables of zeros.
    assert "Omitted, zero in every iteration: Direct pages scanned" in text
    assert "-0.00%" not in text
    assert (
        main(["compare-vmstat", "--json", str(work_log / "vanilla"), str(work_log / "patched")])
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    rows = {(r["label"], r["run"]): r for r in data["rows"]}
    assert rows[("Kswapd velocity", "patched")]["values"] == pytest.approx([80.0, 80.0])
    assert data["runs"] == ["vanilla", "patched"]


def test_cli_vmstat_on_iteration_and_run(work_log, capsys):
    assert main(["vmstat", "--json", str(work_log / "patched" / "iter-0")]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["metrics"]["Kswapd efficiency %"] == pytest.approx(75.0)
    assert (one["elapsed_s"], one["elapsed_source"]) == (10.0, "tests-timestamp time ::")
    assert main(["vmstat", "--json", str(work_log / "vanilla")]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["metrics"]["Kswapd efficiency %"] == pytest.approx(55.0)
    assert run["n"]["Kswapd efficiency %"] == 2
    assert len(run["iterations"]) == 2
    assert run["elapsed_s"] == pytest.approx(15.0)  # mean of 10 s and 20 s
    assert run["elapsed_source"] == "tests-timestamp time ::"


def test_monitor_series_rates_per_interval(work_log):
    from analysis.metrics.compare import monitor_series

    rates = monitor_series(mmtests.find_runs(work_log))
    # Only "patched" has monitors; its iter-0 scanned 800 pages over 2 s, 400 each second.
    patched0 = rates.filter((rates["run"] == "patched") & (rates["iteration"] == 0))
    assert patched0["context"].unique().to_list() == ["Kswapd"]
    assert patched0["scanned_pages_per_s"].to_list() == [400.0, 400.0]
    assert patched0["reclaimed_pages_per_s"].to_list() == [300.0, 300.0]
    assert patched0["efficiency_pct"].to_list() == [75.0, 75.0]
    assert set(rates["run"]) == {"patched"}


def test_iteration_config_hz_and_counter_deltas(work_log):
    it = mmtests.find_runs(work_log / "vanilla")[0].iterations[0]
    assert it.config_hz is None
    (it.path / "kconfig-6.1.0.txt.gz").write_bytes(
        gzip.compress(b"# CONFIG_HZ_1000 is not set\nCONFIG_HZ_300=y\nCONFIG_HZ=300\n")
    )
    assert it.config_hz == 300
    deltas = it.counter_deltas("stutterp")
    assert (deltas["pgscan_kswapd"], deltas["pgsteal_kswapd"]) == (1000, 600)
    assert "nr_free_pages" not in deltas  # a gauge
