"""The paper: every number in the prose (main.tex and the checked-in sections/*.tex) is a
generated macro, every generated macro is quoted, the macros match the raw traces, and the
LaTeX builds with its bibliography (CI installs LaTeX with `make latex`)."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess

import pytest

from analysis.ingest.mmtests import find_runs
from analysis.report.paper.build import SECTION_HOOKS, build_inputs
from analysis.report.paper.latex import defined_macros, macro_name, macros_tex, pm
from analysis.study.study import Study
from analysis.study.sweep import knob_sweep
from tests.conftest import DATA, REPO, throttled_lines
from tests.test_bad_input_matrix import PROGRESS

PAPER = REPO / "papers" / "reclaim-throttling"
MAIN = PAPER / "main.tex"
# The paper's base and new run (Makefile AB_RUNS).
AB_RUNS = ("stutterp-aa2", "stutterp-ab-dirty5")
# LaTeX commands of the prose that start with a capital, i.e. are not generated macros.
LATEX_CAPITALS = {"Citet"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    out = tmp_path_factory.mktemp("paper")
    runs = tuple(run for name in AB_RUNS for run in find_runs(DATA / name))
    return out, build_inputs(Study(runs), out, knob_sweep(DATA / "vm-6.12"))


def _uncommented(text: str) -> str:
    return "\n".join(re.sub(r"(?<!\\)%.*", "", line) for line in text.splitlines())


def _body() -> str:
    """The prose: main.tex from \\begin{document} and every checked-in section."""
    text = MAIN.read_text()
    sections = [p.read_text() for p in sorted((PAPER / "sections").glob("*.tex"))]
    return _uncommented("\n".join([text[text.index(r"\begin{document}") :], *sections]))


def test_macro_names_are_letters_only():
    assert macro_name("dirty20 p ninety nine ms") == "DirtyTwoZeroPNinetyNineMs"
    with pytest.raises(ValueError, match="macro AB from both"):
        macros_tex({"a b": "1", "a-b": "2"})
    # Rounded at the sd, as the report's plus_minus: 2.5 keeps two digits (PDG 100-354).
    assert pm(1234.5, 2.5, 0) == "$1{,}234.5 \\pm 2.5$"


def test_section_macros_are_read_back(inputs):
    values = {"a b": "x{y}", "c 2": "$1{,}234 \\pm 5$"}
    assert defined_macros("% text\n" + macros_tex(values)) == {
        macro_name(k): v for k, v in values.items()
    }
    out, built = inputs
    assert set(built.section_macros) == set(SECTION_HOOKS)
    for name, macros in built.section_macros.items():
        tex = (out / "generated" / f"{name}.tex").read_text()
        assert macros and len(macros) == tex.count("\\newcommand{"), name


def test_no_number_is_typed_in_the_text():
    # A digit inside a name (ext4) is not a number.
    assert re.findall(r"(?<![A-Za-z])\d+", _body()) == []


def test_every_macro_in_the_text_is_generated_and_every_generated_one_is_used(inputs):
    out, built = inputs
    defined = set(defined_macros((out / "macros.tex").read_text()))
    assert defined == {macro_name(k) for k in built.macros}
    # A hook whose generated file holds only macros has its prose checked in.
    for name, macros in built.section_macros.items():
        lines = (out / "generated" / f"{name}.tex").read_text().splitlines()
        if all(line.startswith(("%", "\\newcommand")) for line in lines):
            defined |= set(macros)
    used = set(re.findall(r"\\([A-Z][A-Za-z]*)", _body())) - LATEX_CAPITALS
    assert used - defined == set(), "quoted but not generated"
    assert defined - used == set(), "generated but never quoted"
    for name in SECTION_HOOKS:
        assert f"\\input{{generated/{name}}}" in _body()
    for path in (PAPER / "sections").glob("*.tex"):
        assert f"\\input{{sections/{path.stem}}}" in _body(), path


def test_macros_match_the_raw_traces(inputs):
    # The base run (first in path order) throttled this often per iteration, by grep.
    _, built = inputs
    base = find_runs(DATA / AB_RUNS[0])[0]
    counts = [len(throttled_lines(it.path)) for it in base.iterations]
    expected = pm(statistics.mean(counts), statistics.stdev(counts), 0)
    assert built.macros["base throttle events"] == expected
    assert built.macros["base iterations"] == str(len(base.iterations))
    assert built.macros["config hz"] == built.macros["inferred hz"] == "250"


@pytest.mark.skipif(shutil.which("latexmk") is None, reason="latexmk not installed (make latex)")
def test_paper_builds_with_the_generated_numbers(inputs):
    out, built = inputs
    run = subprocess.run(
        ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", f"-outdir={out}", MAIN],
        env={"PATH": "/usr/bin:/bin", "TEXINPUTS": f"{out}//:{PAPER}:", "BIBINPUTS": f"{PAPER}:"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, (out / "main.log").read_text()[-2000:]
    text = subprocess.run(
        ["pdftotext", out / "main.pdf", "-"], capture_output=True, text=True, check=True
    ).stdout
    assert "Should the reclaim throttle timeouts change?" in text
    assert built.macros["base run"] in text and built.macros["sw kernel"] in text
    assert "??" not in text  # no unresolved reference or citation
    # The bibliography came through bibtex: the seed commit and mmtests are listed.
    assert "8cd7c588decf470bf7e14f2be93b709f839a965e" in text.replace("-\n", "")
    assert "github.com/gormanm/mmtests" in text


def test_an_mmtests_tree_without_ftrace_builds_what_applies(tmp_path, capsys):
    """Issue 17: ``mmlab paper`` on a plain mmtests tree ended in a traceback. The real
    ppc64le trees have usemem logs and vmstat but no ftrace: the Ops table and the latency
    comparison are built, every trace section is one sentence, and stderr says which."""
    from analysis.cli import main

    ci = DATA / "mmtests-ci" / "work"
    runs = [str(ci / "log.ltccip8.2020-06-12_1807"), str(ci / "log.ltccip8.2020-06-03_1400")]
    assert main(["paper", *runs, "--out", str(tmp_path), "--json"]) == 0
    out, err = capsys.readouterr()
    left = ["throttle", "stalls", "fits", "shrinker-replay", "sweep", "designed"]
    assert json.loads(out)["left_out"] == left
    first, second, third = [ln for ln in err.splitlines() if not PROGRESS.match(ln)]
    assert third.startswith("mmlab paper: no --experiment")
    assert first == (
        f"mmlab paper: no ftrace captures in these runs: left out {', '.join(left[:4])}"
        " (each written as a sentence saying so)"
    )
    assert second.startswith("mmlab paper: no --sweep: ")
    for name in ("fits", "shrinker-replay"):
        assert "no ftrace captures" in (tmp_path / "generated" / f"{name}.tex").read_text()
    assert "no ftrace captures" in (tmp_path / "tables" / "throttle.tex").read_text()
    assert "\\begin{tabular}" in (tmp_path / "tables" / "ops.tex").read_text()
    assert "user-1" in (tmp_path / "tables" / "comparison.tex").read_text()
