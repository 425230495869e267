"""``mmlab capture --kernel`` on fake inputs: arguments, the vng command, provenance.

No VM boots here: the host side runs against a stand-in ``vng`` on PATH that does what the
guest side would (reads the spec, writes result.json and a run tree into the shared
directory). The real boot is tests/test_capture_vm_boot.py (``make kernels-test``).
"""

from __future__ import annotations

import argparse
import io
import itertools
import json
import os
import stat
import sys
import tarfile
from pathlib import Path

import pytest

from analysis import cli
from analysis.capture import guest as guest_side
from analysis.capture import vm
from analysis.capture.run import CaptureConfig
from analysis.commands import capture as capture_command
from analysis.errors import InputError


@pytest.fixture(autouse=True)
def private_capture_lock(tmp_path, monkeypatch):
    """A guest capture holds the host capture lock: here a private one, so that a real
    capture on the machine (or another test) neither blocks these nor is blocked."""
    from analysis.capture import run

    lock = tmp_path / "capture.lock"
    real = run.machine_lock
    monkeypatch.setattr(run, "machine_lock", lambda: real(lock))
    monkeypatch.setenv("MMLAB_CAPTURE_LOCK", str(lock))
    return lock


RECORD = {
    "kernel_release": "6.12.117",
    "source_package": "linux-source-6.12 6.12.117-1~deb12u1",
    "patch_series_sha256": "ab" * 32,
    "compiler": "gcc (Debian 12.2.0-14+deb12u1) 12.2.0",
}


def kernel_image(tmp_path: Path, record: dict | None = RECORD) -> Path:
    image = tmp_path / "kernels" / "bzImage"
    image.parent.mkdir()
    image.write_bytes(b"not really a kernel")
    if record is not None:
        (image.parent / "build.json").write_text(json.dumps(record))
    return image


def test_build_record_is_required_beside_the_image(tmp_path):
    image = kernel_image(tmp_path, record=None)
    with pytest.raises(InputError, match="make kernels") as err:
        vm.read_build_record(image)
    assert err.value.path == image.parent / "build.json"
    (image.parent / "build.json").write_text('{"kernel_release": "6.12"}')
    with pytest.raises(InputError, match="lacks source_package, patch_series_sha256"):
        vm.read_build_record(image)
    (image.parent / "build.json").write_text("{\n oops")
    with pytest.raises(InputError, match="line 2"):
        vm.read_build_record(image)
    with pytest.raises(InputError, match="no such kernel image"):
        vm.read_build_record(tmp_path / "missing")


def test_accelerator_choice(tmp_path):
    dev = tmp_path / "kvm"
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor avx\n")
    assert vm.choose_accel("tcg", dev, cpuinfo)[0] == "tcg"
    accel, reason = vm.choose_accel("auto", dev, cpuinfo)
    assert accel == "tcg" and "missing" in reason
    with pytest.raises(InputError, match="--accel kvm"):
        vm.choose_accel("kvm", dev, cpuinfo)
    dev.write_text("")
    accel, reason = vm.choose_accel("auto", dev, cpuinfo)
    assert accel == "tcg" and "hypervisor" in reason
    assert vm.choose_accel("kvm", dev, cpuinfo)[0] == "kvm"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu vme sse2 avx\n")
    assert vm.choose_accel("auto", dev, cpuinfo)[0] == "kvm"


def _guest(tmp_path: Path, accel: str) -> vm.GuestConfig:
    return vm.GuestConfig(
        kernel=tmp_path / "bzImage",
        sysctls=(("vm.reclaim_throttle_writeback_ms", "20"),),
        accel=accel,
        memory_mb=1536,
        cpus=2,
    )


@pytest.mark.parametrize("accel", ["tcg", "kvm"])
def test_vng_command(tmp_path, accel):
    share, disk = tmp_path / "share", tmp_path / "share" / "disk.img"
    cmd = vm.vng_command(_guest(tmp_path, accel), share, disk, "/venv/bin/python")
    assert cmd[:3] == ["vng", "--run", str(tmp_path / "bzImage")]
    assert ("--disable-kvm" in cmd) == (accel == "tcg")
    assert "--force-9p" in cmd
    pairs = dict(itertools.pairwise(cmd))
    assert pairs["--memory"] == "1536M" and pairs["--cpus"] == "2"
    assert pairs["--disk"] == str(disk)
    assert pairs["--rwdir"] == f"{vm.GUEST_SHARE}={share}"
    # The guest starts where the host's package is (its interpreter imports it from there).
    assert (Path(pairs["--cwd"]) / "analysis" / "__init__.py").is_file()
    assert pairs["--exec"] == (
        f"/venv/bin/python -m analysis.capture.guest {vm.GUEST_SHARE}/spec.json"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mmlab")
    capture_command.register(parser.add_subparsers())
    return parser


def test_capture_argv_repeats_the_config_in_the_guest(tmp_path):
    cfg = CaptureConfig(
        out=tmp_path,
        run="wb20",
        iterations=5,
        workers=(4, 8),
        duration_s=7.5,
        limit_mb=200,
        events_include=("mm_vmscan_lru_isolate",),
        interval_s=0.5,
        buffer_kb=4096,
        compression="gz",
        warmup_s=2.0,
        probe_s=20.0,
        system_wide=True,
        slab_files=30000,
    )
    args = _parser().parse_args(["capture", "/guest/out", *vm.capture_argv(cfg)])
    assert (args.run, args.iterations, args.workers) == ("wb20", 5, (4, 8))
    assert (args.duration, args.limit_mb, args.interval) == (7.5, 200, 0.5)
    assert (args.buffer_kb, args.compress, args.warmup) == (4096, "gz", 2.0)
    assert (args.probe_seconds, args.system_wide, args.slab_files) == (20.0, True, 30000)
    assert args.events == "mm_vmscan_lru_isolate" and args.kernel is None
    with pytest.raises(InputError, match="--sysctl"):
        vm.capture_argv(CaptureConfig(out=tmp_path, run="x", sets=(("vm.dirty_ratio", "5"),)))


def test_capture_argv_passes_the_users_command_to_the_guest(tmp_path, monkeypatch):
    """The command after '--' reaches the guest's capture whole, with its directory (the
    guest sees the host's root over 9p) and timeout; the guest's mmlab parses it back."""
    cfg = CaptureConfig(
        out=tmp_path,
        run="mine",
        command=("python3", "-c", "print(1)", "--limit-mb", "5"),
        command_cwd=tmp_path,
        command_timeout_s=90.0,
        beside=True,
    )
    seen = {}
    monkeypatch.setattr("analysis.capture.run.capture", lambda c, *a: seen.update(c=c) or [])
    assert cli.main(["capture", "/guest/out", *vm.capture_argv(cfg)]) == 0
    inner = seen["c"]
    assert inner.command == cfg.command and inner.limit_mb == cfg.limit_mb
    assert (inner.command_cwd, inner.command_timeout_s, inner.beside) == (tmp_path, 90.0, True)


def test_sysctl_without_kernel_is_refused(tmp_path, capsys):
    rc = cli.main(
        ["capture", str(tmp_path / "o"), "--run", "x", "--limit-mb", "64", "--workers", "3",
         "--sysctl", "vm.reclaim_throttle_writeback_ms=20"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "--sysctl" in err and "--kernel" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_bad_sysctl_text_names_the_option(tmp_path, capsys):
    image = kernel_image(tmp_path)
    rc = cli.main(
        ["capture", str(tmp_path / "o"), "--run", "x", "--limit-mb", "64", "--workers", "3",
         "--kernel", str(image), "--accel", "tcg", "--sysctl", "vm.reclaim_throttle_writeback_ms"]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "--sysctl" in err and "NAME=VALUE" in err


FAKE_VNG = r"""#!{python}
# Stand-in for vng: what the guest side would leave in the shared directory.
import json, sys
from pathlib import Path
argv = sys.argv[1:]
if argv == ["--version"]:
    print("virtme-ng 0.0-fake")
    sys.exit(0)
Path({log!r}).write_text(json.dumps(argv))
share = Path(argv[argv.index("--rwdir") + 1].split("=", 1)[1])
spec = json.loads((share / "spec.json").read_text())
run = spec["capture_argv"][spec["capture_argv"].index("--run") + 1]
it = share / "out" / run / "iter-0"
it.mkdir(parents=True)
(it / "kernel.version").write_text("Linux version 6.12.117-fake\n")
import zstandard
(it / "ftrace-stutterp.zst").write_bytes(zstandard.ZstdCompressor().compress({trace!r}.encode()))
result = {{"boot_s": 41.5, "capture_s": 120.25, "capture_rc": {rc},
          "stderr": "guest says no", "cgroup": {{"version": spec["cgroup"]}},
          "sysctls_read_back": {{name: {{"requested": value, "read_back": value}}
                                for name, value in spec["sysctls"]}}}}
(share / "result.json").write_text(json.dumps(result))
"""


# What the patched kernel would print at writeback_ms=20 and divisor 1 (HZ=250): 20 ms is
# 5 jiffies = 20000 µs; seed 001's call takes all 1,000,000 deferred: 1,000,000 + 878.
TRACE = (
    "python-7093 [001] ..... 11655.871390: mm_vmscan_throttled: nid=0 usec_timeout=20000 "
    "usect_delayed=8000 reason=VMSCAN_THROTTLE_WRITEBACK\n"
    "python-7095 [000] ..... 11655.871400: mm_shrink_slab_start: super_cache_scan+0x0/0x210 "
    "0000000032b10627: nid: 0 objects to shrink 1000000 gfp_flags GFP_HIGHUSER_MOVABLE "
    "cache items 1800000 delta 878 total_scan 1000878 priority 12\n"
)


def fake_vng(tmp_path: Path, monkeypatch, rc: int = 0) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "vng-argv.json"
    script = bin_dir / "vng"
    script.write_text(FAKE_VNG.format(python=sys.executable, log=str(log), rc=rc, trace=TRACE))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return log


def test_host_side_moves_the_tree_and_writes_provenance(tmp_path, monkeypatch):
    log = fake_vng(tmp_path, monkeypatch)
    image = kernel_image(tmp_path)
    out = tmp_path / "out"
    cfg = CaptureConfig(out=out, run="wb20", iterations=1, workers=(4,), limit_mb=128)
    guest = vm.GuestConfig(
        kernel=image,
        sysctls=(("vm.reclaim_throttle_writeback_ms", "20"), ("vm.shrinker_deferred_divisor", "1")),
        accel="tcg",
        accel_reason="--accel tcg",
    )
    monkeypatch.chdir(tmp_path)  # the ingest cache (build/ingest) goes there
    (image.parent / "build.json").write_text(json.dumps({**RECORD, "config_hz": 250}))
    result = vm.run_guest_capture(cfg, guest)
    assert result.run_dir == out / "wb20"
    assert (out / "wb20" / "iter-0" / "kernel.version").read_text().startswith("Linux")
    assert sorted(p.name for p in out.iterdir()) == ["wb20"]  # share dir and disk removed
    prov = json.loads((out / "wb20" / "vm.json").read_text())
    assert prov["kernel_build"]["patch_series_sha256"] == "ab" * 32
    assert prov["accelerator"] == "tcg" and "TCG" in prov["timing_note"]
    assert prov["sysctls_requested"] == {
        "vm.reclaim_throttle_writeback_ms": "20",
        "vm.shrinker_deferred_divisor": "1",
    }
    assert prov["sysctls_read_back"]["vm.shrinker_deferred_divisor"]["read_back"] == "1"
    assert prov["timings_s"]["guest_boot"] == 41.5
    assert prov["timings_s"]["guest_capture"] == 120.25
    assert prov["vng_version"] == "virtme-ng 0.0-fake"
    (check,) = prov["knob_check"]
    assert check["iteration"] == "iter-0"
    (writeback,) = check["throttle"]
    assert writeback["seen_us"] == [20_000] and writeback["agrees"]
    assert check["deferral"]["discriminating_matching"] == 1 and check["deferral"]["agrees"]
    argv = json.loads(log.read_text())
    assert "--disable-kvm" in argv and prov["vng_command"][1:] == argv


def test_a_failed_guest_capture_is_an_error_and_leaves_nothing(tmp_path, monkeypatch):
    fake_vng(tmp_path, monkeypatch, rc=2)
    out = tmp_path / "out"
    cfg = CaptureConfig(out=out, run="x", iterations=1, workers=(4,), limit_mb=128)
    guest = vm.GuestConfig(kernel=kernel_image(tmp_path))
    with pytest.raises(InputError, match="guest says no") as failed:
        vm.run_guest_capture(cfg, guest)
    assert not out.exists()  # the OUT this capture created is gone again
    # ... but what the guest left is the error's evidence (a launcher SIGKILLed in the
    # divisor sweep left only its message): its result and the tree it wrote.
    with tarfile.open(fileobj=io.BytesIO(failed.value.evidence), mode="r:gz") as tar:
        names = set(tar.getnames())
        result = json.load(tar.extractfile("result.json"))
    assert {"result.json", "console.log", "out/x/iter-0/kernel.version"} <= names
    assert result["stderr"] == "guest says no" and not any("disk" in n for n in names)
    (out / "keep" / "iter-0").mkdir(parents=True)  # an OUT it did not create stays as it was
    with pytest.raises(InputError, match="guest says no"):
        vm.run_guest_capture(cfg, guest)
    assert [p.name for p in out.iterdir()] == ["keep"]


def test_guest_finds_exactly_one_virtio_disk(tmp_path):
    (tmp_path / "sda").mkdir()
    with pytest.raises(RuntimeError, match="found \\[\\]"):
        guest_side.find_virtio_disk(tmp_path)
    (tmp_path / "vda").mkdir()
    assert guest_side.find_virtio_disk(tmp_path) == "/dev/vda"
    (tmp_path / "vdb").mkdir()
    with pytest.raises(RuntimeError, match="vda', 'vdb"):
        guest_side.find_virtio_disk(tmp_path)


def test_guest_knobs_are_read_back(tmp_path):
    knob = tmp_path / "vm" / "reclaim_throttle_writeback_ms"
    knob.parent.mkdir()
    knob.write_text("100\n")
    got = guest_side.set_knobs([["vm.reclaim_throttle_writeback_ms", "20"]], root=tmp_path)
    assert got == {
        "vm.reclaim_throttle_writeback_ms": {"from": "100", "requested": "20", "read_back": "20"}
    }
    with pytest.raises(InputError, match="no such sysctl"):
        guest_side.set_knobs([["vm.no_such_knob", "1"]], root=tmp_path)


def test_sigterm_stops_the_guest_and_leaves_nothing(tmp_path):
    """A stand-in vng that never finishes: SIGTERM to mmlab kills it and removes the share."""
    import signal
    import subprocess
    import time

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pid_file = tmp_path / "vng.pid"
    script = bin_dir / "vng"
    script.write_text(
        f'#!/bin/sh\n[ "$1" = --version ] && exit 0\necho $$ > {pid_file}\nexec sleep 600\n'
    )
    script.chmod(0o755)
    out = tmp_path / "out"
    argv = [sys.executable, "-m", "analysis.cli", "capture", str(out), "--run", "x",
            "--limit-mb", "128", "--workers", "4", "--iterations", "1", "--accel", "tcg",
            "--kernel", str(kernel_image(tmp_path))]  # fmt: skip
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not pid_file.is_file():
        assert time.monotonic() < deadline and proc.poll() is None, "vng never started"
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 128 + signal.SIGTERM  # 143, as a host capture
    assert "interrupted by SIGTERM" in proc.stderr.read()
    assert not Path(f"/proc/{pid_file.read_text().strip()}").exists()
    assert not out.exists()


def test_vng_beside_this_python_finds_its_own_helpers(tmp_path, monkeypatch):
    """`.venv/bin/mmlab experiment run` without the venv on PATH: vng starts virtme-run by
    name, which must resolve in vng's own folder (every run of a retried sweep failed with
    "virtme-run: not found")."""
    import subprocess

    bin_dir = tmp_path / "venv-bin"
    bin_dir.mkdir()
    helper = bin_dir / "virtme-run"
    helper.write_text("#!/bin/sh\necho helper ran\n")
    vng = bin_dir / "vng"
    vng.write_text("#!/bin/sh\nexec virtme-run\n")
    for f in (helper, vng):
        f.chmod(f.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    out = subprocess.run([str(vng)], env=vm.tool_env(str(vng)), capture_output=True, text=True)
    assert (out.returncode, out.stdout) == (0, "helper ran\n")
    bare = subprocess.run([str(vng)], capture_output=True, text=True)
    assert bare.returncode == 127  # what the sweep's runs hit without it
    assert vm.tool_env("vng")["PATH"] == "/usr/bin:/bin"  # a vng found on PATH: PATH as is
