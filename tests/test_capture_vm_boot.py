"""Boot the patched kernel under virtme-ng and capture inside it (``make kernels-test``).

Skipped unless ``MMLAB_VM_TESTS=1`` (a TCG boot and capture take minutes: never in
``make test``) and qemu, vng and build/kernels/bzImage with its build.json are present.
The knobs are set away from their defaults, so a trace that shows them cannot be the
built-in behaviour: WRITEBACK throttles must print ``usec_timeout=20000`` (20 ms at HZ=250,
the default is 100000) and every shrinker call must fit divisor 1 (take all deferred work),
with at least one call that divisor 2^priority would not explain. The workload is the
bundled sweep's (kernels/sweep.sh): 4 workers in 192 MiB, tried first, reclaimed too little
under TCG to throttle at all.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from analysis import cli
from analysis.capture.knobs import check_deferral, check_throttle, expected_timeouts_us
from tests.conftest import REPO

KERNEL = REPO / "build" / "kernels" / "bzImage"

pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(os.environ.get("MMLAB_VM_TESTS") != "1", reason="make kernels-test"),
    pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None, reason="no qemu"),
    pytest.mark.skipif(shutil.which("vng") is None, reason="no vng (make setup)"),
    pytest.mark.skipif(not (KERNEL.parent / "build.json").is_file(), reason="make kernels"),
]


def test_guest_capture_shows_the_knobs(tmp_path):
    from analysis.ingest import ftrace

    out = tmp_path / "out"
    rc = cli.main(
        ["capture", str(out), "--run", "boot", "--kernel", str(KERNEL), "--accel", "auto",
         "--sysctl", "vm.reclaim_throttle_writeback_ms=20",
         "--sysctl", "vm.shrinker_deferred_divisor=1",
         "--iterations", "1", "--workers", "8", "--duration", "8", "--limit-mb", "256",
         "--slab-files", "40000", "--probe-seconds", "15", "--guest-timeout", "1500"]
    )  # fmt: skip
    assert rc == 0
    prov = json.loads((out / "boot" / "vm.json").read_text())
    back = prov["sysctls_read_back"]
    assert back["vm.reclaim_throttle_writeback_ms"]["read_back"] == "20"
    assert back["vm.shrinker_deferred_divisor"]["read_back"] == "1"
    assert prov["kernel_build"]["patch_series_sha256"]
    trace = ftrace.read(out / "boot" / "iter-0" / "ftrace-stutterp.zst", cache_dir=tmp_path)
    hz = prov["kernel_build"]["config_hz"]
    expected = expected_timeouts_us({"vm.reclaim_throttle_writeback_ms": "20"}, hz)
    throttled = trace.lazy("mm_vmscan_throttled").collect()
    checks = {c.reason: c for c in check_throttle(throttled, expected)}
    assert "VMSCAN_THROTTLE_WRITEBACK" in checks, f"no writeback throttle: {checks}"
    assert checks["VMSCAN_THROTTLE_WRITEBACK"].agrees, checks
    deferral = check_deferral(trace.lazy("mm_shrink_slab_start").collect(), "1")
    assert deferral.agrees and deferral.discriminating_matching > 0, deferral
