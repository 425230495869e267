"""Sweeps: grids, the registry, resumability, nothing half-written, and the throttle model's
sweep point against an independent count of the bundled trace."""

from __future__ import annotations

import importlib.machinery
import json
import subprocess
import sys
import types
from functools import cache
from pathlib import Path

import cloudpickle
import polars as pl
import pytest
import zstandard

from analysis.cli import main
from analysis.errors import InputError
from analysis.ingest.grid import read_grid
from analysis.models import sweep as s
from tests.conftest import DATA

CALLS: list[dict] = []


def plane(params: dict[str, object]) -> dict[str, float]:
    """A test-local sweep model with a known answer: z = x² + y; x = 3 is refused."""
    CALLS.append(dict(params))
    if params["x"] == 3:
        raise ValueError("x = 3 is not allowed")
    return {"z": float(params["x"]) ** 2 + float(params.get("y", 0))}


plane.parameters = ("x", "y")


def lines_in(params: dict[str, object]) -> dict[str, float]:
    """A test-local model reading its input: the number of lines of the file ``src``."""
    CALLS.append(dict(params))
    return {"lines": float(len(Path(str(params["src"])).read_text().splitlines()))}


REGISTRY = {"plane": "tests.test_sweep:plane", "lines": "tests.test_sweep:lines_in"}


def grid(tmp_path, text: str):
    path = tmp_path / "grid.yaml"
    path.write_text(text)
    return path


def test_grid_forms(tmp_path):
    points = read_grid(
        grid(
            tmp_path,
            "a: 5\nb: [1, 2]\nc: {start: 1, stop: 100, num: 3, log: true}\n"
            "d: {start: 0, stop: 1, step: 0.5}\n",
        )
    )
    # 1 x 2 x 3 x 3 points, the last name varying fastest; 10 = sqrt(1 * 100).
    assert len(points) == 18
    assert points[0] == {"a": 5, "b": 1, "c": pytest.approx(1), "d": 0}
    assert [p["c"] for p in points[:9:3]] == pytest.approx([1, 10, 100])
    assert [p["d"] for p in points[:3]] == [0, 0.5, 1]
    steps = [p["e"] for p in read_grid(grid(tmp_path, "e: {start: 2, stop: 8, step: 3}\n"))]
    assert steps == [2, 5, 8] and all(type(v) is int for v in steps)


def test_a_list_of_points_is_a_model_grid_too(tmp_path):
    """Issue 29 item 26: one grammar for both sweeps; the list form reaches the model."""
    table = s.sweep(
        "plane", grid(tmp_path, "- {x: 1, y: 2}\n- {x: 4}\n"), tmp_path / "o", registry=REGISTRY
    ).table
    assert pl.read_parquet(table)["z"].to_list() == [3.0, 16.0]  # 1 + 2, 4 squared


@pytest.mark.parametrize(
    ("text", "why", "line"),
    [
        ("x: [1]\ny: []\n", "empty list", 2),
        ("x: {start: 1, stop: 2, num: 0}\n", "empty range", 1),
        ("x: [1]\ny: {start: 2, stop: 1, step: 1}\n", "empty range", 2),
        ("x: {start: 1, stop: 2}\n", "one of num or step", 1),
        ("- 1\n- 2\n", "mapping", 1),
        ("x: [1\n", "not YAML", 2),
        ("a: b: c\n", r"not YAML: mapping values are not allowed here \(column 5\)", 1),
    ],
)
def test_bad_grids_are_refused_before_anything_is_written(tmp_path, text, why, line):
    out = tmp_path / "out"
    with pytest.raises(InputError, match=why) as err:
        s.sweep("plane", grid(tmp_path, text), out, registry=REGISTRY)
    assert err.value.line == line
    assert "\n" not in str(err.value)
    assert not out.exists()


def test_unknown_parameters_and_models(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(InputError, match="unknown parameters for model plane: w"):
        s.sweep("plane", grid(tmp_path, "x: [1]\nw: [2]\n"), out, registry=REGISTRY)
    with pytest.raises(InputError, match="unknown sweep model"):
        s.sweep("nope", grid(tmp_path, "x: [1]\n"), out, registry=REGISTRY)
    ghost = {"ghost": "tests.test_sweep:no_such_model"}
    with pytest.raises(InputError, match="cannot be loaded"):
        s.sweep("ghost", grid(tmp_path, "x: [1]\n"), out, registry=ghost)
    assert not out.exists()


def test_sweep_table_and_resume(tmp_path):
    out = tmp_path / "out"
    CALLS.clear()
    first = s.sweep("plane", grid(tmp_path, "x: [1, 2]\ny: [10, 20]\n"), out, registry=REGISTRY)
    assert (first.points, first.computed, first.resumed) == (4, 4, 0)
    table = pl.read_parquet(first.table)
    assert table.columns == ["x", "y", "z"]
    assert table.rows() == [(1, 10, 11.0), (1, 20, 21.0), (2, 10, 14.0), (2, 20, 24.0)]
    # A wider grid: only the new points are computed.
    CALLS.clear()
    second = s.sweep("plane", grid(tmp_path, "x: [1, 2, 4]\ny: [10, 20]\n"), out, registry=REGISTRY)
    assert (second.computed, second.resumed) == (2, 4)
    assert CALLS == [{"x": 4, "y": 10}, {"x": 4, "y": 20}]
    assert pl.read_parquet(second.table)["z"].to_list() == [11, 21, 14, 24, 26, 36]


def test_a_replaced_input_or_a_new_mmlab_computes_the_point_again(tmp_path, monkeypatch):
    """Issue 17: a capture replaced at the same path gave the old point back."""
    src, out = tmp_path / "capture.txt", tmp_path / "out"
    g = grid(tmp_path, f"src: {src}\n")
    src.write_text("a\nb\n")
    assert pl.read_parquet(s.sweep("lines", g, out, registry=REGISTRY).table)["lines"][0] == 2
    assert s.sweep("lines", g, out, registry=REGISTRY).computed == 0  # unchanged: resumed
    src.write_text("a\nb\nc\n")
    again = s.sweep("lines", g, out, registry=REGISTRY)
    assert again.computed == 1
    assert pl.read_parquet(again.table)["lines"][0] == 3
    monkeypatch.setattr(s, "__version__", "99.0")
    assert s.sweep("lines", g, out, registry=REGISTRY).computed == 1


def test_a_failing_point_leaves_whole_points_and_no_table(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(InputError, match=r'failed at point \{"x": 3\}: x = 3 is not allowed'):
        s.sweep("plane", grid(tmp_path, "x: [1, 2, 3, 4]\n"), out, registry=REGISTRY)
    assert not (out / "plane.parquet").exists()
    parts = sorted((out / s.POINTS_DIR).glob("*.parquet"))
    assert sorted(pl.read_parquet(p)["x"].item() for p in parts) == [1, 2]
    assert not list(out.rglob("*.tmp"))
    CALLS.clear()
    done = s.sweep("plane", grid(tmp_path, "x: [1, 2, 4]\n"), out, registry=REGISTRY)
    assert (done.computed, done.resumed) == (1, 2)


def test_local_dask_cluster_gives_the_in_process_table(tmp_path):
    g = grid(tmp_path, "x: [1, 2, 5]\ny: 1\n")
    local = s.sweep("plane", g, tmp_path / "a", registry=REGISTRY)
    dask = s.sweep("plane", g, tmp_path / "b", workers=1, registry=REGISTRY)
    assert dask.computed == 3
    assert pl.read_parquet(dask.table).equals(pl.read_parquet(local.table))


def test_unreachable_scheduler_is_a_clear_error(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(InputError, match="no Dask scheduler reachable") as err:
        s.sweep(
            "plane",
            grid(tmp_path, "x: [1]\n"),
            out,
            scheduler="tcp://127.0.0.1:9",
            registry=REGISTRY,
        )
    assert str(err.value).startswith("tcp://127.0.0.1:9")
    assert not out.exists()


ITER = DATA / "stutterp-dirty5" / "dirty5" / "iter-0"


@cache
def _delays(path: Path) -> tuple[int, ...]:
    """Every usect_delayed of the raw trace text, read without the ftrace reader."""
    text = zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read().decode()
    return tuple(
        int(line.split("usect_delayed=")[1].split()[0])
        for line in text.splitlines()
        if "mm_vmscan_throttled:" in line
    )


def _share_above(tau_us: int) -> tuple[float, int]:
    delays = _delays(ITER / "ftrace-stutterp.zst")
    return sum(d > tau_us for d in delays) / len(delays), len(delays)


def test_throttle_sweep_point_against_the_raw_trace(tmp_path):
    share, n = _share_above(30_000)
    assert n > 100
    g = grid(tmp_path, f"capture: {ITER}\ntau_us: [30000, 200000]\nwait: empirical\n")
    result = s.sweep("throttle", g, tmp_path / "out")
    table = pl.read_parquet(result.table)
    # KM censored only at the 100 ms timeout: S(30 ms) is the plain share above 30 ms.
    assert table["p_timeout"][0] == pytest.approx(share)
    assert table["extrapolated"].to_list() == [0.0, 1.0]
    assert table["velocity_pps"][0] > table["velocity_pps"][1]


def test_throttle_sweep_with_the_fitted_wait(tmp_path):
    # At the observed 100 ms timeout the fit's P(timeout) must agree with the raw share of
    # sleeps that ran out, within sampling error (binomial SE of that share).
    share, n = _share_above(99_999)
    g = grid(tmp_path, f"capture: {ITER}\ntau_us: [100000]\nwait: [fit, empirical]\n")
    table = pl.read_parquet(s.sweep("throttle", g, tmp_path / "out").table).sort("wait")
    assert table["wait_fit"].to_list() == [0.0, 1.0]
    se = max((share * (1 - share) / n) ** 0.5, 1 / n)
    assert abs(table["p_timeout"][1] - share) < 3 * se + 1e-3
    assert table["p_timeout"][0] == pytest.approx(share)


def test_cli_model_throttle_text_json_and_errors(capsys):
    it = str(ITER)
    share, _ = _share_above(50_000)
    argv = [
        "model",
        "throttle",
        it,
        "--timeout",
        "VMSCAN_THROTTLE_WRITEBACK=50000",
        "--bootstrap",
        "20",
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "\x1b" not in text
    assert f"{share:.3f} [" in text
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    (pred,) = data["reasons"][0]["predictions"]
    assert pred["p_timeout"]["value"] == pytest.approx(share)
    assert pred["p_timeout"]["low"] <= share <= pred["p_timeout"]["high"]
    assert main(["model", "throttle", it, "--timeout", "CONGESTED=5"]) == 2
    assert "no throttle reason 'CONGESTED'" in capsys.readouterr().err


def test_throttle_sweep_refuses_a_bad_timeout(tmp_path):
    out = tmp_path / "out"
    g = grid(tmp_path, f"capture: {ITER}\ntau_us: [-5]\n")
    with pytest.raises(InputError, match=r"tau_us.*-5.*must be > 0"):
        s.sweep("throttle", g, out)
    assert not out.exists()


def test_in_process_and_two_dask_workers_agree_to_the_last_bit(tmp_path):
    # Fits pin BLAS to one thread (Dask's nanny gives its workers one): before, P(timeout)
    # moved by up to 8e-5 relative between OPENBLAS_NUM_THREADS=1 and 2.
    g = grid(tmp_path, f"capture: {ITER.resolve()}\ntau_us: [30000, 200000]\nwait: fit\n")
    local = pl.read_parquet(s.sweep("throttle", g, tmp_path / "a").table)
    dask = pl.read_parquet(s.sweep("throttle", g, tmp_path / "b", workers=2).table)
    assert local["wait_fit"].to_list() == [1.0, 1.0]
    assert dask.equals(local)


def test_scheduler_sweep_refuses_relative_paths_before_connecting(tmp_path):
    out = tmp_path / "out"
    g = grid(tmp_path, "capture: data/x\ntau_us: [1000]\n")
    with pytest.raises(InputError, match="data/x is a relative path") as err:
        s.sweep("throttle", g, out, scheduler="tcp://127.0.0.1:9")
    assert err.value.path == g and "\n" not in str(err.value)
    assert not out.exists()


def test_remote_probe_names_what_a_worker_lacks():
    probe = s._remote_probe()
    assert probe(["analysis.models.sweep"], [str(ITER)]) == []
    assert probe(["no_such_mmlab_module"], ["/no/such/capture"]) == [
        "cannot import no_such_mmlab_module (is mmlab installed there?)",
        "no file or directory /no/such/capture",
    ]
    # Sent by value: a process where mmlab cannot be imported still runs it.
    code = (
        "import pickle, sys; sys.modules['analysis'] = None; "
        "print(pickle.loads(sys.stdin.buffer.read())(['analysis'], []))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        input=cloudpickle.dumps(probe),
        capture_output=True,
        check=True,
    )
    assert run.stdout.decode().strip() == ("['cannot import analysis (is mmlab installed there?)']")


def test_scheduler_whose_worker_lacks_the_model_is_one_line(tmp_path, monkeypatch):
    from dask.distributed import LocalCluster

    # The model's module exists in this process only (sys.modules, no file): the worker
    # process cannot import it, as a worker without mmlab cannot import analysis.
    module = types.ModuleType("only_here_model")
    module.__spec__ = importlib.machinery.ModuleSpec("only_here_model", None)
    module.f = lambda params: {"z": 1.0}
    monkeypatch.setitem(sys.modules, "only_here_model", module)
    out = tmp_path / "out"
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        pytest.raises(InputError, match=r"worker .*cannot import only_here_model") as err,
    ):
        s.sweep(
            "m",
            grid(tmp_path, "x: [1]\n"),
            out,
            scheduler=cluster.scheduler_address,
            registry={"m": "only_here_model:f"},
        )
    assert "\n" not in str(err.value)
    assert not out.exists()
