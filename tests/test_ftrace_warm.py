"""`make setup` compiles the ingest's numba kernels (analysis.warm): a real
ingest after the warm-up must find every kernel it calls, with its argument types, already
compiled, or the first ingest of every environment pays numba's compile (issue 23); and
the shrinker model's kernels must be compiled by it too."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

# In a fresh process: the compiled versions of every kernel after warm(), then after a real
# ingest of a bundled capture (file, zstd, blocks); a kernel or argument type the warm-up
# missed shows as a new version.
PROBE = """
import importlib, sys, tempfile
from pathlib import Path
from numba.core.registry import CPUDispatcher
from analysis.warm import warm

def versions():
    found = {}
    for name in ("arrow", "columns", "layout", "tokenizer"):
        module = importlib.import_module("analysis.ingest.ftrace." + name)
        for attr, obj in vars(module).items():
            if isinstance(obj, CPUDispatcher):
                found[f"{name}.{attr}"] = sorted(map(str, obj.signatures))
    return found

warm()
before = versions()
from analysis.ingest import ftrace
with tempfile.TemporaryDirectory() as tmp:
    ftrace.read(sys.argv[1], cache_dir=Path(tmp))
after = versions()
changed = [k for k in after if after[k] != before[k]]
from analysis.models import shrinker_kernel
# The model's entry points (scan_loop is compiled into shrink_call).
entries = ("shrink_call", "targets", "replay")
uncompiled = [name for name in entries if not getattr(shrinker_kernel, name).signatures]
print(" ".join(changed + uncompiled) or "none")
"""
CAPTURE = "data/stutterp-ab-dirty5/dirty5-b/iter-5/ftrace-stutterp.zst"


def test_warm_compiles_what_a_real_ingest_calls() -> None:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, CAPTURE], cwd=REPO, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["none"]
