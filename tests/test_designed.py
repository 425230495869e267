"""A designed sweep read as dose and response, and the paper's section on it: the knob's
settings as the runs' kernels read them back, each point's effect the one the effects
report calls the answer, and sentences that flip with their numbers.

The executed plan here is a copy of the bundled pilot (real guest runs) whose ``shrinker``
level is declared to set ``vm.shrinker_deferred_divisor`` to 1 and whose runs say they
read 1 back (edited in the copy: the pilot itself set no knob, so its effects are the
workload's, which is all these tests need)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from analysis.errors import InputError
from analysis.ingest.capture_meta import read_order
from analysis.report.paper.designed import ANSWER_LEAD, NO_EXPERIMENT, answer_sentences, section
from analysis.stats.blocked import BlockedEffects, LevelEffect
from analysis.study.dose import DesignedSweep, designed_sweep, knob_settings
from analysis.study.effects import MIN_ADJUSTED_DF, EndpointFamily, ExperimentEffects
from tests.conftest import REPO

PILOT = REPO / "data" / "vm-6.12-lab" / "pilot"
KNOB = "vm.shrinker_deferred_divisor"


def _set_read_back(run_dir: Path, value: str) -> None:
    for meta in run_dir.glob("iter-*/mmlab.json"):
        doc = json.loads(meta.read_text())
        doc["sysctls_vm_before"][KNOB] = value
        meta.write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def knobbed(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("designed") / "pilot"
    shutil.copytree(PILOT, out)
    order = json.loads((out / "order.json").read_text())
    for s in order["settings"]:
        if s["levels"]["workload"] == "shrinker":
            s["params"]["sysctl"] = {KNOB: 1}
            _set_read_back(out / s["name"], "1")
    (out / "order.json").write_text(json.dumps(order))
    return out


@pytest.fixture(scope="module")
def sweep(knobbed) -> DesignedSweep:
    return designed_sweep(knobbed)


def test_points_carry_the_settings_the_kernels_read_back(sweep):
    assert sweep.effects.factor == "workload" and sweep.effects.reference == "stutterp"
    strata = {c.stratum for c in sweep.curves}
    assert strata == {(("pressure", "memcg1"),), (("pressure", "global"),)}
    for curve in sweep.curves:
        assert curve.knob == KNOB
        ref, level = curve.points
        # The reference's setting is what its runs' kernel held: the default, not "1".
        assert (ref.level, ref.setting, ref.value, ref.effect) == (
            "stutterp",
            "2^priority",
            None,
            None,
        )
        assert (level.level, level.setting, level.value) == ("shrinker", "1", 1.0)


def test_each_point_is_the_answer_the_effects_report_gives(sweep):
    result = sweep.effects
    for curve in sweep.curves:
        (family,) = [f for f in result.families
                     if (f.endpoint, f.stratum) == (curve.endpoint, curve.stratum)]  # fmt: skip
        answer = family.adjusted if family.adjusted is not None and \
            family.adjusted.df >= MIN_ADJUSTED_DF else family.effects  # fmt: skip
        assert curve.points[1].effect == answer.levels[0]
        assert curve.covariate == answer.covariate


def test_runs_that_read_different_settings_are_refused(knobbed, tmp_path):
    out = tmp_path / "pilot"
    shutil.copytree(knobbed, out)
    doc = json.loads((out / "memcg1-shrinker/iter-2/mmlab.json").read_text())
    doc["sysctls_vm_before"][KNOB] = "priority"
    (out / "memcg1-shrinker/iter-2/mmlab.json").write_text(json.dumps(doc))
    setting = next(s for s in read_order(out).settings if s.name == "memcg1-shrinker")
    with pytest.raises(InputError, match="runs read 1, priority"):
        knob_settings(out, setting, KNOB)


# --- sentences from numbers: hand-made effects (only their verdicts and numbers matter) ---


def _level(name: str, estimate: float, ci, q: float, changed: bool) -> LevelEffect:
    return LevelEffect(name, 10, 10, estimate, ci, q, q, 0.30, changed)


def _sweep(*levels: LevelEffect, aa: tuple[str, ...] = ()) -> DesignedSweep:
    effects = BlockedEffects("default", "log", 0.5, 0.1, 18, 10, 30, None, None, levels, 0.05, 0.8)
    family = EndpointFamily("reclaim_efficiency", "reclaimed/scanned", (("pressure", "memcg1"),),
                            True, effects, "", None, None, "")  # fmt: skip
    result = ExperimentEffects("sweep-x", "divisor", "default", aa, 30, 30,
                               "reclaim_efficiency", (family,))  # fmt: skip
    return DesignedSweep(result, ())


def test_a_null_is_stated_with_the_change_it_could_have_missed(tmp_path):
    s = _sweep(_level("div1", -0.04, (-0.2, 0.15), 0.6, False),
               _level("prio", 0.02, (-0.1, 0.15), 0.7, False))  # fmt: skip
    # +30 % up is 1 - 1/1.3 = 23.1 % down.
    assert answer_sentences(s) == (
        "Setting divisor (sweep-x: 30 boots, primary endpoint reclaim_efficiency against "
        "default): under pressure memcg1, no setting changed reclaim_efficiency detectably "
        "(changes -4 to 2 %; the runs detect +30.0/-23.1 %)."
    )
    # The Results subsection gives every setting.
    body, _, _ = section([s], tmp_path)
    assert "no divisor setting changed reclaim\\_efficiency detectably" in body
    assert "div1 -4 [-20, 15] \\%, within the detectable +30.0/-23.1 \\%" in body


def test_the_sentence_flips_when_a_level_changes():
    text = answer_sentences(_sweep(_level("div1", -0.25, (-0.35, -0.12), 0.004, True),
                                   _level("prio", 0.02, (-0.1, 0.15), 0.7, False)))  # fmt: skip
    assert "reclaim_efficiency changed: div1 -25 [-35, -12] % (q 0.004)" in text
    assert "; the other setting gave no verdict (changes 2 %; the runs detect" in text
    assert "no setting changed" not in text


def test_a_value_every_run_shared_is_said_in_the_answer():
    s = _sweep(_level("wb4", 0.009, (-0.05, 0.07), 0.8, False))
    # Under global pressure no reclaimer slept in reclaim_throttle(): 0 s in every run.
    slept = EndpointFamily("throttle_stall", "s slept", (("pressure", "memcg1"),), False, None,
                           "all 55 runs have the same value, 0", None, None, "", 0.0)  # fmt: skip
    s = DesignedSweep(replace(s.effects, families=(*s.effects.families, slept)), ())
    assert answer_sentences(s).endswith("(changes 0.9 %; the runs detect +30.0/-23.1 %); "
                                        "throttle_stall was 0 in every run.")  # fmt: skip


def test_an_interval_clear_of_zero_without_a_verdict_says_its_q():
    # BH over the family's settings: p 0.016 alone, q 0.055 once six settings are counted.
    level = LevelEffect("wb20", 6, 7, -0.14, (-0.238, -0.03), 0.016, 0.055, 0.188, False)
    text = answer_sentences(_sweep(level))
    assert "wb20 -14.0 [-23.8, -3.0] % (p 0.016, but q 0.055 over the family's settings)" in text
    assert "within the detectable" not in text


def _secondary(endpoint: str, effects: BlockedEffects | None, note: str = "") -> EndpointFamily:
    return EndpointFamily(endpoint, "s slept", (("pressure", "global"),), False, effects, note,
                          None, None, "")  # fmt: skip


def test_the_section_names_secondary_changes_nulls_and_what_could_not_be_estimated(tmp_path):
    primary = _sweep(_level("wb4", 0.01, (-0.1, 0.1), 0.9, False))
    moved = BlockedEffects(
        "default",
        "log",
        7.4,
        0.24,
        40,
        7,
        54,
        None,
        None,
        (_level("wb4", -0.70, (-0.77, -0.62), 1e-10, True),),
        0.05,
        0.8,
    )
    quiet = replace(moved, levels=(_level("wb4", 0.05, (-0.1, 0.2), 0.5, False),))
    families = (
        *primary.effects.families,
        _secondary("throttle_stall", moved),
        _secondary("probe_latency", quiet),
        _secondary("memcg_reclaim_stall", None, "all 55 runs have the same value, 0"),
    )
    s = DesignedSweep(replace(primary.effects, families=families), ())
    body, _, _ = section([s], tmp_path)
    assert (
        "Secondary endpoints a setting changed: throttle\\_stall under pressure global: wb4 "
        "-70.0 [-77.0, -62.0] \\% (q 1e-10)."
    ) in body
    assert (
        "No other secondary endpoint changed detectably; the largest change each could "
        "have missed: probe\\_latency under pressure global (+30.0/-23.1 \\%)."
    ) in body
    assert (
        "Not estimable: memcg\\_reclaim\\_stall under pressure global (all 55 runs have "
        "the same value, 0)."
    ) in body


def test_an_aa_verdict_is_called_false_and_kept_out_of_the_answer(tmp_path):
    s = _sweep(
        _level("default2", 0.3, (0.1, 0.5), 0.01, True),
        _level("div1", 0.01, (-0.1, 0.1), 0.9, False),
        aa=("default2",),
    )
    assert "no setting changed" in answer_sentences(s)  # the control is not a setting
    body, _, _ = section([s], tmp_path)
    assert "A/A control (default2, run exactly as default) gave a verdict on" in body
    assert "a false one" in body


def test_the_section_without_an_experiment_says_so(tmp_path):
    assert section([], tmp_path) == (NO_EXPERIMENT + "\n", "", [])


def test_the_section_writes_its_table_and_figure(sweep, tmp_path):
    body, answer, written = section([sweep], tmp_path)
    assert sorted(p.name for p in written) == ["designed-pilot-6.12.pdf", "designed-pilot-6.12.tex"]
    assert "\\input{tables/designed-pilot-6.12}" in body
    assert (tmp_path / "figures" / "designed-pilot-6.12.pdf").stat().st_size > 1000
    table = (tmp_path / "tables" / "designed-pilot-6.12.tex").read_text()
    # The primary endpoint's row in each stratum, marked, with the read-back setting.
    assert table.count("reclaim\\_velocity *") == 2 and "shrinker (1)" in table
    assert answer.startswith(ANSWER_LEAD + "Setting vm.shrinker\\_deferred\\_divisor (pilot-6.12")
    assert "under pressure memcg1" in answer and "\\%" in answer


def test_the_section_says_where_the_covariate_narrowed_the_intervals(sweep, tmp_path):
    body, _, _ = section([sweep], tmp_path)
    used = [
        f
        for f in sweep.effects.families
        if f.adjusted is not None and f.adjusted.df >= MIN_ADJUSTED_DF
    ]
    if not used:
        assert "No endpoint is adjusted for a per-run covariate" in body
    for f in used:
        where = ", ".join(f"{k} {v}" for k, v in f.stratum)
        assert (
            f"{f.endpoint} under {where}, {round(100 * f.narrowing)} \\%".replace("_", "\\_")
            in body
        )


def test_each_knob_of_a_sweep_gets_its_own_panels():
    from analysis.report.charts.dose import dose_frame
    from analysis.study.dose import DosePoint, DoseResponse

    def curve(knob: str, setting: str, level: str) -> DoseResponse:
        points = (
            DosePoint("default", "100" if "writeback" in knob else "4", None, None, False),
            DosePoint(level, setting, float(setting), _level(level, 0.1, (0.0, 0.2), 0.3, False),
                      False),
        )  # fmt: skip
        return DoseResponse(knob, "reclaim_efficiency", "reclaimed/scanned",
                            (("pressure", "memcg1"),), True, "log", None, points)  # fmt: skip

    wb, np_ = "vm.reclaim_throttle_writeback_ms", "vm.reclaim_throttle_noprogress_ms"
    frame = dose_frame([curve(wb, "500", "wb500"), curve(np_, "500", "np500")])
    panels = frame.group_by("panel").agg("level")
    # The two timeouts' 500 ms settings are two knobs: never one axis.
    assert sorted(panels["panel"]) == [
        "reclaim_throttle_noprogress_ms: reclaim_efficiency (change %) pressure memcg1",
        "reclaim_throttle_writeback_ms: reclaim_efficiency (change %) pressure memcg1",
    ]
    assert curve(wb, "500", "wb500").knob_unit == "ms"
