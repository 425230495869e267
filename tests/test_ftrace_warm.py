"""The first run of an environment costs what every later one does (issue 23).

The trace reader is compiled ahead of time (a C extension built with the package), so an
ingest loads no JIT at all. The shrinker model's numba kernels are compiled by `make
setup` (analysis.warm): a real model run after the warm-up must find each of them already
compiled, or the first model run of every environment pays numba's compile."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

# In a fresh process: a real ingest of a bundled capture (file, zstd, blocks) loads the
# compiled reader and no numba; after warm(), every entry point of the shrinker model has
# a compiled version.
PROBE = """
import sys, tempfile
from pathlib import Path
from analysis.ingest import ftrace
with tempfile.TemporaryDirectory() as tmp:
    ftrace.read(sys.argv[1], cache_dir=Path(tmp))
loaded = [m for m in ("numba", "llvmlite") if m in sys.modules]
compiled = "analysis.ingest.ftrace._parse" in sys.modules
from analysis.warm import warm
warm()
from analysis.models import shrinker_kernel
# The model's entry points (scan_loop is compiled into shrink_call).
entries = ("shrink_call", "targets", "replay")
uncompiled = [name for name in entries if not getattr(shrinker_kernel, name).signatures]
print(" ".join(loaded + uncompiled + ([] if compiled else ["no-compiled-reader"])) or "none")
"""
CAPTURE = "data/stutterp-ab-dirty5/dirty5-b/iter-5/ftrace-stutterp.zst"


def test_ingest_needs_no_jit_and_warm_compiles_the_model() -> None:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, CAPTURE], cwd=REPO, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["none"]
