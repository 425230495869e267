"""The shrinker deferral model against hand-worked arithmetic (docs/shrinker-deferral.md).

Every expected number below was worked out by hand from the kernel rules in the doc, not
produced by the model; the comments show the working.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from analysis.errors import InputError
from analysis.models import shrinker as model
from analysis.models.shrinker import Variant, do_shrink_slab
from tests.conftest import DATA

SB = "super_cache_scan+0x0/0x210"  # a filesystem shrinker: batch 1024, stops without __GFP_FS
NOFS = ["GFP_NOFS", "__GFP_HIGHMEM", "__GFP_MOVABLE"]
FS = ["GFP_HIGHUSER_MOVABLE"]


@pytest.mark.parametrize(
    ("variant", "kswapd", "target"),
    [
        (Variant("G1"), False, 900_000),  # min(1,000,000 + 878, 1,800,000 / 2): windup clamp
        (Variant("G3"), False, 1_122),  # (1,000,000 >> 12) + 878 = 244 + 878
        (Variant("G2"), True, 84_211),  # 878 + 1,000,000 / 12 = 878 + 83,333
        (Variant("G2"), False, 878),  # direct reclaim: its own delta only
    ],
)
def test_seed_001_worked_example(variant, kswapd, target):
    call = do_shrink_slab(
        variant, deferred=1_000_000, freeable=1_800_000, priority=12, kswapd=kswapd
    )
    # 1,800,000 >> 12 = 439; x 4 = 1,756; / 2 = 878 (the mail's 800 is a slip).
    assert (call.delta, call.total_scan) == (878, target)


def test_g1_negative_count_fixup_and_clamps():
    # nr = -50,000 (a corrupted count): total_scan < 0 -> freeable (1,000), next = nr;
    # delta 0 < 250 -> windup min(1,000, 500) = 500; 3 batches of 128 = 384; next -> 0.
    call = do_shrink_slab(Variant("G1"), deferred=-50_000, freeable=1_000, priority=12)
    assert (call.delta, call.total_scan, call.scanned, call.next_deferred) == (0, 500, 384, 0)
    # priority 0: delta 2,000 >= 250, no windup; 5,000 + 2,000 clamped to 2 x 1,000;
    # 15 batches = 1,920 scanned; next = 7,000 - 1,920.
    call = do_shrink_slab(Variant("G1"), deferred=5_000, freeable=1_000, priority=0)
    assert (call.total_scan, call.scanned, call.next_deferred) == (2_000, 1_920, 5_080)
    # G3 caps the hand-back at 2 x freeable: min(5,000 + 2,000 - 1,920, 2,000).
    call = do_shrink_slab(Variant("G3"), deferred=5_000, freeable=1_000, priority=0)
    assert (call.total_scan, call.scanned, call.next_deferred) == (2_000, 1_920, 2_000)


def test_scan_loop_tail_rule():
    # delta 200 (freeable 100, priority 0): one batch of 128, the tail 72 < freeable stays.
    call = do_shrink_slab(Variant("G3"), deferred=0, freeable=100, priority=0)
    assert (call.total_scan, call.scanned, call.next_deferred) == (200, 128, 72)
    # total 120 < batch but >= freeable 60: the whole 120 is scanned in one go.
    call = do_shrink_slab(Variant("G3"), deferred=0, freeable=60, priority=0)
    assert (call.scanned, call.next_deferred) == (120, 0)
    # A blocked caller scans nothing and hands everything back.
    call = do_shrink_slab(Variant("G3"), deferred=0, freeable=60, priority=0, blocked=True)
    assert (call.scanned, call.next_deferred) == (0, 120)


def test_g2_literal_and_fixed_hand_back():
    args = {"deferred": 1_000_000, "freeable": 1_800_000, "priority": 12, "kswapd": True}
    # 84,211 in batches of 1,024: 82 batches = 83,968 scanned, tail 243 left.
    literal = do_shrink_slab(Variant("G2"), batch=1024, **args)
    fixed = do_shrink_slab(Variant("G2", literal=False), batch=1024, **args)
    assert literal.scanned == fixed.scanned == 83_968
    assert literal.next_deferred == 1_000_000 - 83_968
    assert fixed.next_deferred == 1_000_878 - 83_968
    # The patch's nr - scanned goes negative when delta work was scanned: 100 - 3,599,360,
    # clamped at 0, so the 640 unscanned objects of the call's own share are lost.
    big = {"deferred": 100, "freeable": 1_800_000, "priority": 0, "kswapd": True, "batch": 1024}
    assert do_shrink_slab(Variant("G2"), **big).next_deferred == 0
    assert do_shrink_slab(Variant("G2", literal=False), **big).next_deferred == 740
    # delta == 0: the patch returns before taking the counter.
    tiny = do_shrink_slab(Variant("G2"), deferred=1_000, freeable=1_000, priority=12, kswapd=True)
    assert (tiny.ran, tiny.nr, tiny.next_deferred) == (False, 0, 0)


def test_divisors():
    assert model.divisor_table("priority").tolist()[:3] == [1, 1, 2]
    assert model.divisor_table("2^priority")[12] == 4096
    assert model.divisor_table(lambda p: p + 1)[12] == 13
    assert model.divisor_table("10").tolist() == [10] * 13
    for bad in (0, -3, "0", 1.5, lambda p: p, "fast"):
        with pytest.raises(ValueError, match="divisor"):
            model.divisor_table(bad)
    with pytest.raises(ValueError, match="unknown generation"):
        Variant("G4")
    # The divisor changes the G3 target: (1,000,000 // 10) + 878.
    call = do_shrink_slab(Variant("G3", 10), deferred=1_000_000, freeable=1_800_000, priority=12)
    assert call.total_scan == 100_878


def _calls(rows: list[tuple]) -> pl.DataFrame:
    """Invocation frame: (context, gfp, delta, priority, nr, to_scan, scanned, freed, out),
    freeable 10,000, one call per second, each 0.5 s long, none overlapping."""
    names = ("context", "gfp_flags", "delta_objects", "priority", "deferred_in_objects")
    names += ("to_scan_objects", "scanned_objects", "freed_objects", "deferred_out_objects")
    frame = pl.DataFrame(rows, schema=list(names), orient="row")
    n = frame.height
    return frame.with_columns(
        shrinker=pl.lit(SB),
        shrinker_ptr=pl.lit("00000000cb7bcf64"),
        nid=pl.lit(0, pl.Int64),
        ts_ns=pl.int_range(n, dtype=pl.Int64) * 1_000_000_000,
        duration_ns=pl.lit(500_000_000, pl.Int64),
        begin_line=pl.int_range(n, dtype=pl.Int64) * 2 + 1,
        end_line=pl.int_range(n, dtype=pl.Int64) * 2 + 2,
        freeable_objects=pl.lit(10_000, pl.Int64),
    )


# A G1 capture, worked by hand (freeable 10,000, batch 1,024): two GFP_NOFS calls at
# priority 0 (delta 20,000) cannot run the shrinker and defer; then kswapd and a direct
# reclaimer at priority 12 (delta 4) take the counter: windup clamp 5,000, 4 batches.
SEQUENCE = [
    ("direct", NOFS, 20_000, 0, 0, 20_000, 0, 0, 20_000),
    ("direct", NOFS, 20_000, 0, 20_000, 20_000, 0, 0, 40_000),
    ("kswapd", FS, 4, 12, 40_000, 5_000, 4_096, 2_048, 35_908),
    ("direct", FS, 4, 12, 35_908, 5_000, 4_096, 1_024, 31_816),
]


def test_replay_reproduces_a_g1_capture_and_checks_it():
    calls = _calls(SEQUENCE)
    assert model.blocked_calls(calls).to_list() == [True, True, False, False]
    assert model.capturing_generation(calls) == ("G1", "total_scan arithmetic")
    assert model.replay_agreement(calls, "G1").as_json() == {"matched": 4, "total": 4, "share": 1}
    # G3 with the same nr: 40,000 >> 12 = 9, + 4 = 13, not 5,000 (calls 3 and 4 differ).
    assert model.replay_agreement(calls, "G3").matched == 2
    run = model.model_trace(calls, Variant("G1"))
    assert run.capture_chain_agreement.share == 1.0
    result = run.result
    assert result.calls["deferred_objects"].to_list() == [20_000, 40_000, 35_908, 31_816]
    assert result.backlog["backlog_objects"].to_list() == [
        0, 20_000, 0, 40_000, 0, 35_908, 0, 31_816
    ]  # fmt: skip
    assert (result.scanned_objects, result.backlog_max_objects) == (8_192, 40_000)
    # freed/scanned of the capture: (2,048 + 1,024) / 8,192.
    assert result.efficiency == pytest.approx(0.375)
    assert result.velocity_per_s == pytest.approx(8_192 / 3.5)
    assert (result.context("direct").max, result.context("kswapd").max) == (4_096, 4_096)


def test_replay_counterfactuals_g3_and_g2():
    calls = _calls(SEQUENCE)
    g3 = model.replay(calls, Variant("G3"))
    # 20,000 + 20,000 is capped at 2 x 10,000; then (20,000 >> 12) + 4 = 8 < batch: nothing.
    assert g3.calls["total_scan_objects"].to_list() == [20_000, 20_000, 8, 8]
    assert g3.backlog["backlog_objects"].to_list() == [0, 20_000, 0, 20_000] * 2
    assert g3.scanned_objects == 0
    g2 = model.replay(calls, Variant("G2"))
    # Direct calls never take: 20,000 + 20,000 waits for kswapd, which scans
    # 4 + 40,000 // 12 = 3,337 -> 3 batches = 3,072 and hands back 40,000 - 3,072.
    assert g2.calls["nr_objects"].to_list() == [0, 0, 40_000, 0]
    assert g2.calls["deferred_objects"].to_list() == [20_000, 40_000, 36_928, 36_932]
    assert g2.backlog_end_objects == 36_932
    assert (g2.context("kswapd").max, g2.context("direct").max) == (3_072, 0)
    assert g2.freed_objects == pytest.approx(3_072 * 0.375)
    # G1 with deferred work only in kswapd: the direct reclaimer of call 4 keeps to delta 4.
    g1k = model.replay(calls, Variant("G1", kswapd_only=True))
    assert g1k.calls["scanned_objects"].to_list() == [0, 0, 4_096, 0]
    sweep = model.divisor_sweep(calls, [1, 4096], generation="G3")
    # divisor 1: call 3 targets min(20,000 + 4, 20,000) = 20,000 -> 19 batches = 19,456;
    # it hands back 548, and call 4 targets 552 < batch.
    assert sweep["scanned_objects"].to_list()[0] == 19_456
    assert sweep["scanned_objects"].to_list()[1] == 0


def test_bad_input():
    with pytest.raises(InputError, match="no mm_shrink_slab"):
        model.replay(_calls(SEQUENCE).clear(), Variant("G3"))
    with pytest.raises(InputError, match="priority"):
        model.replay(_calls(SEQUENCE).with_columns(priority=pl.lit(None, pl.Int64)), Variant())
    with pytest.raises(ValueError, match="sweep parameters"):
        model.SWEEP_MODEL({"trace": "x", "seeks": 2})
    assert math.isnan(model.outputs(model.replay(_calls(SEQUENCE[:1]), Variant()))["efficiency"])


def test_out_of_order_lines_are_counted_not_lost_silently(tmp_path, capsys):
    """Issue 29 item 10: a bundled trace with every window of 8 lines shuffled (lines out
    of time order) loses calls whose start and end share a timestamp; the model says how
    many starts and ends it could not pair, the same counts as the pairing itself."""
    import random

    import zstandard

    from analysis.ingest import ftrace
    from analysis.metrics import pairing
    from analysis.metrics.shrinker import shrinker_invocations
    from analysis.models.shrinker import load_invocations

    path = DATA / "stutterp-dirty5" / "dirty5" / "iter-0" / "ftrace-stutterp.zst"
    lines = zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read().splitlines(True)
    rng = random.Random(1)
    shuffled = []
    for i in range(0, len(lines), 8):
        window = lines[i : i + 8]
        rng.shuffle(window)
        shuffled += window
    trace = tmp_path / "shuffled.trace"
    trace.write_bytes(b"".join(shuffled))
    calls = load_invocations(trace)
    _, paired = shrinker_invocations(
        ftrace.read(trace, note_unparsed=False), pairing.all_intervals({})
    )
    report = paired.report
    assert report.unpaired_begin > 0 and calls.height == report.count
    err = capsys.readouterr().err
    assert f"{report.unpaired_begin:,} mm_shrink_slab_start and {report.unpaired_end:,}" in err
