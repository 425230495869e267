"""``mmlab fit`` end to end on seed 000's mail histograms (data/mail/000_*.txt)."""

from __future__ import annotations

import json
import re

import zstandard

from analysis.cli import main
from tests.conftest import DATA

SEED = "000_901e324e43c5b0b5.txt"
ITER = DATA / "stutterp-dirty5" / "dirty5" / "iter-0"
FAST = ["--family", "log-logistic", "--family", "weibull", "--bootstrap", "0"]


def test_kswapd_writeback_json_and_the_mails_16_percent(seeds_dir, capsys):
    args = ["fit", str(seeds_dir / SEED), "--label", "2=kswapd", "--context", "kswapd", *FAST]
    assert main([*args, "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)
    assert (group["reason"], group["usec_timeout"], group["n"]) == (
        "VMSCAN_THROTTLE_WRITEBACK",
        100000,
        244,
    )
    assert {"family", "params", "aic", "bic", "g2_p", "max_cdf_gap"} <= set(group["models"][0])
    assert group["best"] == group["models"][0]["model"]
    p_timeout = group["observables"]["p_timeout"]
    # The mail's histogram has 11 of 244 sleeps at the timeout; its prose says "Roughly 16%
    # of stalls reached the timeout". The fit agrees with the histogram, not the prose.
    assert p_timeout["ci_low"] < 11 / 244 < p_timeout["ci_high"]
    assert p_timeout["ci_high"] < 0.16
    p_zero = group["observables"]["p_zero"]
    assert p_zero["ci_low"] < 94 / 244 < p_zero["ci_high"]
    assert [q["p"] for q in group["observables"]["quantiles"]] == [0.5, 0.9, 0.99]
    assert isinstance(group["identifiability"], list)


def test_text_reports_unfittable_groups_per_group(seeds_dir, capsys):
    assert main(["fit", str(seeds_dir / SEED), "--reason", "writeback_", *FAST]) == 0
    out = capsys.readouterr().out
    # Legacy congestion_wait: every sleep ran past its timeout, nothing to fit, one message.
    assert "not fitted: all 1165 delays reached the 100000 us timeout" in out
    # wait_iff_congested: 82394 of 82434 woke in the first jiffy, 40 later: fitted.
    assert "n=82434 sleeps" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "\x1b" not in out and "nan" not in out.lower()


def test_no_throttle_events_is_said(tmp_path, capsys):
    text = tmp_path / "h.txt"
    text.write_text("3 mm_vmscan_kswapd_wake: nid=0 zid=1 order=0\n")
    assert main(["fit", str(text)]) == 0
    assert "no throttle delays to fit" in capsys.readouterr().out


def test_bootstrap_text_fits_80_columns_and_says_what_more_data_buys(seeds_dir, capsys):
    args = ["fit", str(seeds_dir / SEED), "--label", "2=kswapd", "--context", "kswapd"]
    assert main([*args, "--family", "log-logistic", "--bootstrap", "10"]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "parametric bootstrap, 10 replicates" in out
    # 11 of 244 sleeps timed out: a binomial share 0.045 is known to ±1.96·√(p(1−p)/n)
    # = ±0.026, and ±0.01 takes 1.96²·p(1−p)/0.01² ≈ 1650 sleeps (the log-logistic
    # interval is a little wider and skewed on the logit scale).
    needed = int(out.split("+-0.01 would take about ")[1].split()[0])
    assert 1400 < needed < 2200


def test_few_sleeps_in_few_bins_get_every_parametric_p(tmp_path, capsys):
    # The first 400 kB of a real capture: 15 writeback sleeps in 3 jiffy bins. A model's bin
    # probabilities there dip ~1e-15 below 0 (rounding), which crashed the G2 bootstrap.
    raw = zstandard.ZstdDecompressor().stream_reader((ITER / "ftrace-stutterp.zst").open("rb"))
    text = raw.read(404_096)
    trace = tmp_path / "excerpt.txt"
    text = text[: text.rfind(b"\n", 0, 400_000) + 1]
    trace.write_bytes(text)
    assert main(["fit", str(trace), "--json", "--bootstrap", "20"]) == 0
    (group,) = json.loads(capsys.readouterr().out)
    assert group["n"] == text.count(b"mm_vmscan_throttled:") == 15
    best = group["models"][0]["aic"]
    tested = [m for m in group["models"] if m["aic"] - best <= 4.0]
    assert len(tested) > 4 and all(0 < m["g2_p"] <= 1 for m in tested)


def test_an_hz_the_delays_contradict_is_refused_as_stalls_reports_it(seeds_dir, capsys):
    """Issue 17: the seed's delays are all multiples of 4000 us (HZ 250); --hz 1000 fitted
    silently. stalls and fit share HzEstimate.conflict."""
    assert main(["fit", str(seeds_dir / SEED), "--hz", "1000", *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "CONFIG_HZ=1000 conflicts with the throttle delays" in err and "4000 us" in err
    assert main(["stalls", str(seeds_dir / SEED), "--hz", "1000"]) == 0
    assert "CONFIG_HZ=1000 conflicts with the throttle delays" in capsys.readouterr().out
    # The right HZ agrees: fit runs.
    kswapd = ["--label", "2=kswapd", "--context", "kswapd"]
    assert main(["fit", str(seeds_dir / SEED), "--hz", "250", *kswapd, *FAST]) == 0


def test_a_reason_that_selects_nothing_lists_what_exists(seeds_dir, capsys):
    """Issue 17: --reason NOSUCH exited 0 with "no throttle delays"."""
    assert main(["fit", str(seeds_dir / SEED), "--reason", "NOSUCH", *FAST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--reason NOSUCH selects no delays" in err
    assert "VMSCAN_THROTTLE_WRITEBACK" in err and "group 2" in err


def test_text_estimates_are_rounded_where_their_ci_is(capsys):
    """Every estimate row of ``mmlab fit`` prints estimate and both CI ends at one
    rounding (units.decimals_at), on a bundled real trace."""
    trace = DATA / "stutterp-dirty20" / "dirty20" / "iter-0" / "ftrace-stutterp.zst"
    assert main(["fit", str(trace), "--family", "lognormal", "--family", "weibull"]) == 0
    out = capsys.readouterr().out
    number = r"(-?[0-9]+(?:\.[0-9]+)?|inf)"
    # A label ending in a letter or bracket, then three numbers (model rows have six).
    label = r"^\s*\S.*?[A-Za-z)\]%]"
    rows = re.findall(rf"{label}\s+{number}\s+{number}\s+{number}$", out, re.MULTILINE)
    estimates = [r for r in rows if "." in "".join(r)]
    assert len(estimates) >= 6
    for row in estimates:
        decimals = {len(v.partition(".")[2]) for v in row if v != "inf"}
        assert len(decimals) == 1, row


def test_a_long_input_path_is_broken_after_a_slash_not_past_80_columns(seeds_dir, tmp_path, capsys):
    # The header names the input whole (the checkout's own path is in it): a path longer
    # than a line is broken after a "/", every character kept.
    deep = tmp_path / ("a-long-directory-name-" * 3) / ("another-one-" * 4) / SEED
    deep.parent.mkdir(parents=True)
    deep.write_bytes((seeds_dir / SEED).read_bytes())
    args = ["fit", str(deep), "--label", "2=kswapd", "--context", "kswapd", *FAST]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert max(map(len, lines)) <= 80
    header = lines[0].removeprefix("== ") + "".join(line.strip() for line in lines[1:6])
    assert header.startswith(str(deep)) and len(str(deep)) > 80
