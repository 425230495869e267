"""`make test` from a fresh clone, uv sync included (issue 23: at most 5 minutes on 2 cores).

A ``git clone`` of this commit into ``benchmarks/work/make-test-clone``, then ``make
test`` in it, as CI does after ``make latex browser`` (what those install is used if it is
on the machine; a test that needs what is missing skips, and the skips are recorded):
creating ``.venv`` with uv (which compiles the trace reader), the shrinker model's numba
compile, lint and the whole suite on two pytest workers. Wall and CPU time (user +
system of every process, ``wait4``) and the 1/5/15-minute load averages before and after.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from benchmarks.bench_ftrace import REPO, WORK, timed

TARGET_S = 300.0


def run(out_dir: Path) -> dict:
    """Clone, ``make test``, record; write ``make_test.json`` and ``make_test.md``."""
    WORK.mkdir(exist_ok=True)
    clone = WORK / "make-test-clone"
    shutil.rmtree(clone, ignore_errors=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NUMBA_", "VIRTUAL_ENV", "MAKE"))  # `make bench`'s own
    }
    result = timed(["make", "--no-print-directory", "test"], clone, env)
    summary = result.pop("stdout_tail")
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", summary)}
    shutil.rmtree(clone, ignore_errors=True)
    report = {
        "commit": commit,
        "cpus": os.cpu_count(),
        "make_test": result,
        "pytest_summary": summary,
        "tests": counts,
        "target_s": TARGET_S,
        "within_target": result["wall_s"] <= TARGET_S,
    }
    (out_dir / "make_test.json").write_text(json.dumps(report, indent=2) + "\n")
    (out_dir / "make_test.md").write_text(_markdown(report))
    print(_markdown(report))
    return report


def _markdown(r: dict) -> str:
    m = r["make_test"]
    load = ", ".join(f"{x:.2f}" for x in m["load_avg_before"])
    after = ", ".join(f"{x:.2f}" for x in m["load_avg_after"])
    verdict = "met" if r["within_target"] else "**NOT met**"
    return f"""# `make test` from a fresh clone (issue 23)

`git clone` of commit {r["commit"]}, then `make test` in it ({r["cpus"]} cores): uv sync
(compiling the trace reader), the shrinker model's numba compile, lint, the suite on two
pytest workers.

| wall s | CPU s | load avg before | load avg after | target | |
|---:|---:|---|---|---:|---|
| {m["wall_s"]:.0f} | {m["cpu_s"]:.0f} | {load} | {after} | ≤ {r["target_s"]:.0f} s | {verdict} |

pytest: `{r["pytest_summary"]}`

Reproduce with `python -m benchmarks.run --only make_test` (part of `make bench`).
"""


if __name__ == "__main__":
    run(Path(__file__).resolve().parent)
