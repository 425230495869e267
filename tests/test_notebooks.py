"""Every notebook runs headless on small parameters; failures name notebook, cell and line;
sweeps run one execution per grid point and index them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
import pytest

from analysis.cli import main
from analysis.errors import InputError
from analysis.ingest.grid import read_grid
from analysis.notebooks.execute import KERNEL_STARTS, NotebookFailed, execute, parameter_names
from analysis.notebooks.sweep import index_table, point_name, sweep
from tests.conftest import DATA, REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.py"))
# One iteration of one run keeps each execution to seconds.
SMALL_CAPTURE = DATA / "stutterp-dirty5" / "dirty5" / "iter-0"
SHRINKER = REPO / "notebooks" / "05-shrinker-deferral.py"
UNPATCHED = "05-unpatched"

TINY = """\
# %% [markdown]
# A two-cell notebook for the runner's tests.

# %% tags=["parameters"]
n = 3
scale = 1.0
build_dir = "build"

# %%
print(f"total={sum(range(n)) * scale}")

# %%
assert n != 5, "n must not be 5"
"""


def _outputs(path) -> str:
    nb = nbformat.read(path, as_version=4)
    return "\n".join(
        out.get("text", "") + json.dumps(out.get("data", {}))
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
    )


def test_notebooks_are_short_with_a_parameters_cell():
    assert NOTEBOOKS, "no notebooks found"
    for path in NOTEBOOKS:
        assert len(path.read_text().splitlines()) <= 150, path
        assert "build_dir" in parameter_names(path), path


# Notebook 03's bands and sweep made smaller (make runs them whole): 50 band replicates
# and four captures' per-run fits were its 100 s here; three captures keep every timeout.
SMALLER = {
    # The divisor sweep alone (60 boots); make reads the throttle sweep's 160 too.
    "04-significance": {"experiments": ["data/vm-6.12-lab/sweep-divisor"]},
    "03-stall-distributions": {
        "band_bootstrap": 5,
        "sweep": ["data/vm-6.12/wb20", "data/vm-6.12/aa1", "data/vm-6.12/wb500"],
    },
}


def _small_parameters(notebook, build_dir) -> dict[str, object]:
    params = {"build_dir": str(build_dir)} | SMALLER.get(notebook.stem, {})
    if "capture" in parameter_names(notebook):
        params["capture"] = str(SMALL_CAPTURE)
    return params


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> dict:
    """Every notebook executed on small parameters, two at a time (each has its own kernel);
    a notebook's exception is kept for its own test to raise."""
    out = tmp_path_factory.mktemp("notebooks")
    with ProcessPoolExecutor(max_workers=2) as pool:
        futures = {
            nb.stem: pool.submit(execute, nb, out, _small_parameters(nb, out), cwd=REPO)
            for nb in NOTEBOOKS
        }
        # Notebook 05 on a stock kernel's capture (no divisor patch): scoring is skipped.
        stock = _small_parameters(SHRINKER, out) | {"calibration": str(SMALL_CAPTURE)}
        futures[UNPATCHED] = pool.submit(execute, SHRINKER, out, stock, name=UNPATCHED, cwd=REPO)
        return {stem: f.exception() or f.result() for stem, f in futures.items()}


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_on_small_parameters(notebook, executed):
    run = executed[notebook.stem]
    if isinstance(run, BaseException):
        raise run
    nb = nbformat.read(run.ipynb, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.execution_count is not None for c in code)
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    assert run.html.read_text().startswith("<!DOCTYPE html>")
    if "capture" in run.parameters:
        # The parameter took effect: only the small capture was read.
        text = _outputs(run.ipynb)
        assert "dirty5" in text
        assert "dirty20" not in text


def test_shrinker_notebook_skips_scoring_on_a_kernel_without_the_divisor_patch(executed):
    run = executed[UNPATCHED]
    if isinstance(run, BaseException):
        raise run
    text = _outputs(run.ipynb)
    assert "does not have the divisor patch" in text and "section 2 skipped" in text
    assert "Finding" not in text  # no scores, so no finding from them
    # The sections that need only the trace's shrinker calls ran: their charts are there.
    assert len(_chart_outputs(run.ipynb)) == 2


# Chromium from Debian (`make browser`); CI installs it, so the check is skipped only where a
# developer has not.
CHROMIUM = shutil.which("chromium")
# Appended to a copy of the executed HTML: after load, one line per image with its drawn size.
_PROBE = """<script>window.addEventListener("load", () => {
  const out = document.createElement("pre"); out.id = "mmlab-probe";
  out.textContent = [...document.images].map(i => `${i.naturalWidth}x${i.naturalHeight}`)
    .join(" ");
  document.body.appendChild(out);
});</script>"""


def _chart_outputs(ipynb) -> list[dict]:
    """Every rich output of the notebook that is a chart (vega or image)."""
    nb = nbformat.read(ipynb, as_version=4)
    return [
        out.get("data", {})
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.outputs
        if any(k.startswith(("image/", "application/vnd.vega")) for k in out.get("data", {}))
    ]


def _drawn_images(html, tmp_path) -> list[tuple[int, int]]:
    """Sizes of the images a headless Chromium drew for ``html``, with every network
    request failing (no host resolves)."""
    page = tmp_path / html.name
    page.write_text(html.read_text().replace("</body>", _PROBE + "</body>"))
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    probe = re.search(r'<pre id="mmlab-probe">([^<]*)</pre>', dom)
    assert probe, f"{html.name}: the page never finished loading"
    return [tuple(map(int, size.split("x"))) for size in probe.group(1).split()]


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed: run `make browser`")
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_charts_draw_offline_and_are_saved_in_the_notebook(notebook, executed, tmp_path):
    run = executed[notebook.stem]
    if isinstance(run, BaseException):
        raise run
    charts = _chart_outputs(run.ipynb)
    assert charts, f"{notebook.name} shows no chart"
    # Saved as a picture in the .ipynb (any viewer shows it), never as a spec that needs vega.
    assert all("image/svg+xml" in c for c in charts)
    assert not [c for c in charts if any(k.startswith("application/vnd.vega") for k in c)]
    drawn = _drawn_images(run.html, tmp_path)
    # Every chart drew, with no network: a picture of non-zero size per chart output.
    assert len(drawn) >= len(charts)
    assert all(w > 0 and h > 0 for w, h in drawn), drawn


@pytest.fixture
def tiny(tmp_path):
    path = tmp_path / "tiny.py"
    path.write_text(TINY)
    return path


def test_failing_cell_names_notebook_cell_and_line(tiny, tmp_path):
    with pytest.raises(NotebookFailed) as info:
        execute(tiny, tmp_path / "out", {"n": 5})
    # Cells of the .py: markdown 1, parameters 2, print 3, assert 4 (injected cell not counted).
    assert (info.value.cell, info.value.line) == (4, 13)
    assert str(info.value).startswith(f"{tiny}:13: cell 4 failed: AssertionError: n must not be 5")
    assert (tmp_path / "out" / "tiny.failed.ipynb").exists()
    assert not (tmp_path / "out" / "tiny.ipynb").exists()


def test_a_kernel_that_never_answers_is_started_again(tiny, tmp_path, monkeypatch):
    """Two kernels started at once can get the same TCP port; the loser times out before
    any cell ran (seen in `make test`). Such a start is retried; a cell error is not."""
    import papermill

    real, calls = papermill.execute_notebook, []

    def refusing(first: int):
        def start(*args, **kwargs):
            calls.append(kwargs["parameters"])
            if len(calls) <= first:
                raise RuntimeError("Kernel didn't respond in 60 seconds")
            return real(*args, **kwargs)

        return start

    monkeypatch.setattr(papermill, "execute_notebook", refusing(KERNEL_STARTS - 1))
    assert execute(tiny, tmp_path / "out", {"n": 2}).ipynb.exists()
    assert len(calls) == KERNEL_STARTS
    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", refusing(1))
    with pytest.raises(NotebookFailed):
        execute(tiny, tmp_path / "out", {"n": 5})
    assert len(calls) == 2  # one refused start, one run whose cell fails: not run again
    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", refusing(KERNEL_STARTS))
    with pytest.raises(RuntimeError, match="didn't respond"):
        execute(tiny, tmp_path / "out", {"n": 2})
    assert len(calls) == KERNEL_STARTS


def test_notebook_command_reports_the_cell_and_rejects_unknown_parameters(tiny, tmp_path, capsys):
    assert main(["notebook", str(tiny), "--out", str(tmp_path), "-p", "n=5"]) == 1
    assert f"{tiny}:13: cell 4 failed" in capsys.readouterr().err
    assert main(["notebook", str(tiny), "--out", str(tmp_path), "-p", "m=1"]) == 1
    assert "no parameter m" in capsys.readouterr().err


def test_grid_forms(tmp_path):
    product = tmp_path / "product.yaml"
    product.write_text("n: [1, 2]\nscale: [0.5]\n")
    assert read_grid(product) == [{"n": 1, "scale": 0.5}, {"n": 2, "scale": 0.5}]
    points = tmp_path / "points.yaml"
    points.write_text("- {n: 1}\n- {n: 4, scale: 2}\n")
    assert read_grid(points) == [{"n": 1}, {"n": 4, "scale": 2}]
    bad = tmp_path / "bad.yaml"
    bad.write_text("n: [1, 2\nscale: 3\n")
    with pytest.raises(InputError) as info:
        read_grid(bad)
    assert str(info.value).startswith(f"{bad}:")
    empty = tmp_path / "empty.yaml"
    empty.write_text("n: []\n")
    with pytest.raises(InputError, match="'n': empty list of values"):
        read_grid(empty)


def test_the_readmes_sweep_grid_runs_a_notebook_sweep(tiny, tmp_path, capsys):
    """Issue 29 item 26: ``mmlab sweep``'s grid (a fixed scalar beside a list or range, as
    docs/sweeps.md's ``capture: PATH`` beside ``tau_us: [...]``) was refused by sweep-notebook."""
    grid = tmp_path / "grid.yaml"
    grid.write_text("scale: 0.5\nn: {start: 1, stop: 3, step: 2}\n")
    assert main(["sweep-notebook", str(tiny), "--grid", str(grid), "--out", str(tmp_path)]) == 0
    # sum(range(n)) * scale: 0 for n=1, 1.5 for n=3.
    assert "total=0.0" in _outputs(tmp_path / "tiny" / "tiny__scale=0.5__n=1.ipynb")
    assert "total=1.5" in _outputs(tmp_path / "tiny" / "tiny__scale=0.5__n=3.ipynb")


def test_point_names_are_file_safe():
    assert point_name("02-stalls", {"capture": "data/x y", "w": 2.0}) == (
        "02-stalls__capture=data-x-y__w=2.0"
    )


def test_sweep_runs_every_point_and_indexes_failures(tiny, tmp_path):
    out = tmp_path / "sweep"
    grid = grid_file(tmp_path, "n: [2, 5]\nscale: [1.0, 0.5]\n")
    results = sweep(tiny, grid, out, jobs=2)
    index = index_table(results, out)
    assert index["status"].to_list() == ["ok", "ok", "failed", "failed"]
    assert index["n"].to_list() == ["2", "2", "5", "5"]
    # sum(range(2)) * scale, computed in each point's own kernel.
    assert "total=1.0" in _outputs(out / "tiny__n=2__scale=1.0.ipynb")
    assert "total=0.5" in _outputs(out / "tiny__n=2__scale=0.5.ipynb")
    assert all("cell 4 failed" in e for e in index["error"].to_list()[2:])


def test_sweep_rejects_a_parameter_the_notebook_lacks(tiny, tmp_path):
    with pytest.raises(InputError, match="grid sets m, not in its parameters"):
        sweep(tiny, grid_file(tmp_path, "m: 1\n"), tmp_path)


def test_sweep_command_writes_index(tiny, tmp_path, capsys):
    grid = tmp_path / "grid.yaml"
    grid.write_text("n: [1, 3]\n")
    assert main(["sweep-notebook", str(tiny), "--grid", str(grid), "--out", str(tmp_path)]) == 0
    md = (tmp_path / "tiny" / "index.md").read_text()
    assert "2 of 2 points executed." in md
    assert "tiny__n=3" in (tmp_path / "tiny" / "index.csv").read_text()


def grid_file(tmp_path, text: str) -> Path:
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    return path
