"""``mmlab capture --kernel``: the same capture inside a virtme-ng guest booted with that kernel.

The host only builds a command and moves files: it boots ``vng --run BZIMAGE`` (virtme-ng:
the host's filesystem as the guest's root over 9p, read-only), hands the guest a fresh
virtio-blk disk image for the writers' dirty and writeback pages and a shared directory,
and the guest (:mod:`analysis.capture.guest`) formats the disk, mounts the memory cgroup
hierarchy, sets the ``--sysctl`` knobs, runs the ordinary ``mmlab capture`` on the disk and
copies the mmtests tree into the shared directory. All memory pressure is inside the guest;
nothing on the host is changed apart from the output directory.

Provenance (``vm.json`` beside the run's ``iter-N`` directories) records the kernel build
(``build.json`` written by ``make kernels`` beside the image: source package, patch-series
hash, config and compiler), each knob as requested and as the guest read it back, the
guest's size, the exact ``vng`` command, and whether it ran under KVM or TCG emulation
(docs/patched-kernels.md "Running a capture in a guest").
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from analysis.capture import PACKAGE_PARENT
from analysis.errors import InputError
from analysis.ingest.capture_meta import GUEST_TOOL, VM_JSON, VmRecord, read_vm

__all__ = [
    "BUILD_RECORD",
    "GUEST_SHARE",
    "SHARE_PREFIX",
    "GuestConfig",
    "GuestResult",
    "capture_argv",
    "choose_accel",
    "guest_spec",
    "host_identity",
    "kill_orphan_guest",
    "loadavg",
    "provenance",
    "read_build_record",
    "run_guest_capture",
    "tool_env",
    "vng_command",
    "vng_path",
]

# Written by `make kernels` (kernels/build.sh) beside the bzImage.
BUILD_RECORD = "build.json"
REQUIRED_RECORD_KEYS = ("kernel_release", "source_package", "patch_series_sha256", "compiler")
# Where the guest sees the host's shared directory.
GUEST_SHARE = "/run/mmlab-share"
# The guest's mount point of the virtio disk, and the capture's output directory on it.
GUEST_DISK_MOUNT = "/run/mmlab-disk"
MIB_BYTES = 1 << 20
# vm_dirty_ratio's built-in value (mm/page-writeback.c): the guest's unless --sysctl sets it.
DEFAULT_DIRTY_RATIO = 20


@dataclass(frozen=True)
class GuestConfig:
    """One guest capture: the kernel, the guest's size, the knobs, the accelerator.

    ``memory_mb`` is the guest's RAM (qemu ``-m``), ``disk_mb`` the size of the sparse
    virtio disk image, ``cgroup`` the memory cgroup version the guest mounts (1: the
    ``memory`` controller on its own hierarchy, where reclaim throttles memcg reclaimers on
    writeback; 2: the unified hierarchy). ``accel`` is ``kvm`` or ``tcg``. ``pressure``
    ``global`` lets the workload outgrow the guest's memory instead of a cgroup limit
    (kswapd and direct reclaim, as the seed threads ran it); ``filesystem`` is what the disk
    is formatted with; ``write_mb_s``/``read_mb_s`` throttle the disk in qemu (the storage
    speed sets each run's writeback rate, and with it reclaim velocity).
    """

    kernel: Path
    sysctls: tuple[tuple[str, str], ...] = ()
    accel: str = "tcg"
    accel_reason: str = ""
    memory_mb: int = 2048
    cpus: int = 2
    disk_mb: int = 4096
    cgroup: int = 1
    timeout_s: float = 3600.0
    pressure: str = "cgroup"
    filesystem: str = "ext4"
    write_mb_s: float | None = None
    read_mb_s: float | None = None


@dataclass(frozen=True)
class GuestResult:
    """What the host measured and the guest reported (seconds; ``boot_s`` is the guest's
    ``/proc/uptime`` when the guest side started), and the ``vm.json`` written."""

    run_dir: Path
    wall_s: float
    boot_s: float
    capture_s: float
    vm: VmRecord


def read_build_record(kernel: Path) -> dict:
    """The ``build.json`` beside ``kernel``; an InputError names what is missing."""
    if not kernel.is_file():
        raise InputError(kernel, "no such kernel image")
    record_path = kernel.parent / BUILD_RECORD
    if not record_path.is_file():
        raise InputError(
            record_path,
            "missing: the kernel's build record (run `make kernels`, which writes it beside "
            "the image); without it the capture could not say which patches it ran",
        )
    try:
        record = json.loads(record_path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(record_path, f"line {exc.lineno}: not JSON: {exc.msg}") from None
    missing = [k for k in REQUIRED_RECORD_KEYS if not record.get(k)]
    if missing:
        raise InputError(record_path, f"lacks {', '.join(missing)}")
    return record


def choose_accel(
    requested: str, kvm_dev: Path = Path("/dev/kvm"), cpuinfo: Path = Path("/proc/cpuinfo")
) -> tuple[str, str]:
    """``(accelerator, reason)``: ``kvm`` or ``tcg`` for ``--accel auto|kvm|tcg``.

    ``auto`` uses KVM only on bare metal: where the host is itself a virtual machine (the
    ``hypervisor`` CPU flag) a nested guest hung in its firmware on these machines, so
    ``auto`` chooses TCG emulation there; ``--accel kvm`` still tries.
    """
    if requested == "tcg":
        return "tcg", "--accel tcg"
    usable = kvm_dev.exists() and os.access(kvm_dev, os.R_OK | os.W_OK)
    if requested == "kvm":
        if not usable:
            raise InputError(kvm_dev, "--accel kvm: missing or not readable and writable")
        return "kvm", "--accel kvm"
    if requested != "auto":
        raise InputError("--accel", f"expected auto, kvm or tcg, got {requested!r}")
    if not usable:
        return "tcg", f"{kvm_dev} missing or not usable"
    flags = next(
        (
            line.split(":", 1)[1].split()
            for line in cpuinfo.read_text().splitlines()
            if line.startswith("flags")
        ),
        [],
    )
    if "hypervisor" in flags:
        return "tcg", (
            "the host is itself a virtual machine (CPU flag 'hypervisor'): nested KVM guests "
            "hung in the firmware here; --accel kvm to try anyway"
        )
    return "kvm", f"{kvm_dev} usable on bare metal"


def capture_argv(cfg) -> list[str]:
    """The ``mmlab capture`` options that repeat ``cfg`` (a CaptureConfig) inside the guest,
    without the output directory (the guest's disk) and without ``--set``: the guest's
    knobs are set before the capture starts, so every iteration's ``sysctls_vm_before``
    shows them."""
    argv = [
        "--run", cfg.run,
        "--iterations", str(cfg.iterations),
        "--workers", ",".join(str(w) for w in cfg.workers),
        "--duration", repr(cfg.duration_s),
        "--limit-mb", str(cfg.limit_mb),
        "--interval", repr(cfg.interval_s),
        "--buffer-kb", str(cfg.buffer_kb),
        "--compress", cfg.compression,
        "--warmup", repr(cfg.warmup_s),
        "--probe-seconds", repr(cfg.probe_s),
        "--slab-files", str(cfg.slab_files),
        "--negative-dentries", str(cfg.negative_dentries),
        "--pressure", cfg.pressure,
    ]  # fmt: skip
    if cfg.events_include:
        argv += ["--events", ",".join(cfg.events_include)]
    if cfg.system_wide:
        argv.append("--system-wide")
    if cfg.sets:
        raise InputError("--set", "with --kernel, name the guest's knobs with --sysctl")
    if cfg.command:  # the guest sees the host's root over 9p: same cwd, same program
        argv += ["--cwd", str(cfg.command_cwd)]
        if cfg.command_timeout_s is not None:
            argv += ["--timeout", repr(cfg.command_timeout_s)]
        argv += ["--beside"] * cfg.beside + ["--", *cfg.command]
    return argv


def guest_spec(guest: GuestConfig, inner_argv: list[str]) -> dict:
    """What the guest side reads from the shared directory (``spec.json``)."""
    return {
        "disk_mount": GUEST_DISK_MOUNT,
        "share": GUEST_SHARE,
        "cgroup": guest.cgroup,
        "filesystem": guest.filesystem,
        "sysctls": [list(kv) for kv in guest.sysctls],
        "capture_argv": inner_argv,
    }


def vng_path() -> str:
    """``vng`` on PATH, else the one beside this Python (where ``make setup`` installs it:
    ``.venv/bin/mmlab`` is often run without the venv on PATH)."""
    found = shutil.which("vng")
    beside = Path(sys.executable).parent / "vng"
    if found is None and beside.is_file() and os.access(beside, os.X_OK):
        found = str(beside)
    if found is None:
        raise InputError(
            "vng", "not on PATH nor beside this Python: `make setup` installs virtme-ng"
        )
    return found


def tool_env(vng: str) -> dict[str, str]:
    """The environment vng runs in: ours, with vng's own folder first on PATH. vng starts
    ``virtme-run`` (and the guest's helpers) by name, so a vng found beside this Python
    (``.venv/bin/mmlab`` run without the venv on PATH) failed every run with "virtme-run: not
    found"."""
    folder = str(Path(vng).parent) if os.sep in vng else ""
    path = os.environ.get("PATH", "")
    return {**os.environ, "PATH": f"{folder}{os.pathsep}{path}" if folder else path}


def _throttle_opts(guest: GuestConfig) -> list[str]:
    """qemu ``-set`` options throttling the guest's disk (virtme-ng names its first virtio-blk
    drive ``blk-disk0``; ``--qemu-opts`` come after it on qemu's command line)."""
    opts = []
    for direction, rate in (("write", guest.write_mb_s), ("read", guest.read_mb_s)):
        if rate is not None:
            opts.append(f"-set drive.blk-disk0.throttling.bps-{direction}={int(rate * MIB_BYTES)}")
    return opts


def vng_command(
    guest: GuestConfig, share: Path, disk: Path, python: str, vng: str = "vng"
) -> list[str]:
    """The ``vng`` command that boots ``guest.kernel`` and runs the guest side.

    ``--force-9p``: the root is the host's filesystem over 9p (virtiofs needs a host
    daemon); ``--disable-kvm`` under TCG; the disk image is attached as virtio-blk.
    """
    inner = shlex.join([python, "-m", "analysis.capture.guest", f"{GUEST_SHARE}/spec.json"])
    cmd = [vng, "--run", str(guest.kernel), "--force-9p"]
    if guest.accel == "tcg":
        cmd.append("--disable-kvm")
    cmd += [
        "--memory", f"{guest.memory_mb}M",
        "--cpus", str(guest.cpus),
        "--disk", str(disk),
        "--rwdir", f"{GUEST_SHARE}={share}",
        "--cwd", str(PACKAGE_PARENT),
        "--exec", inner,
    ]  # fmt: skip
    if throttle := _throttle_opts(guest):
        cmd += ["--qemu-opts", " ".join(throttle)]
    return cmd


def _tool_version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    return (out.stdout or out.stderr).strip().splitlines()[0] if out.stdout or out.stderr else ""


def host_identity(proc: Path = Path("/proc")) -> dict:
    """The host a guest ran on, as a blocking factor of an experiment: name, CPU model,
    kernel, boot, memory, and the load averages when it was read."""
    from analysis.capture.journal import boot_id
    from analysis.capture.metadata import cpu_info, memory_info

    return {
        "hostname": platform.node(),
        "machine": platform.machine(),
        "kernel_release": platform.release(),
        "boot_id": boot_id(proc / "sys/kernel/random/boot_id"),
        "cpu": cpu_info((proc / "cpuinfo").read_text()),
        "memory": memory_info((proc / "meminfo").read_text()),
        "loadavg_1_5_15": loadavg(proc),
    }


def loadavg(proc: Path = Path("/proc")) -> list[float]:
    """The 1, 5 and 15 minute load averages (``/proc/loadavg``)."""
    return [float(v) for v in (proc / "loadavg").read_text().split()[:3]]


def provenance(
    guest: GuestConfig,
    record: dict,
    command: list[str],
    guest_result: dict,
    timings: dict,
    host: dict | None = None,
) -> dict:
    """The run's ``vm.json``: kernel build, knobs requested and read back, guest, accelerator,
    the guest's boot id (one boot per capture) and the host it ran on."""
    return {
        "tool": GUEST_TOOL,
        "kernel_image": str(guest.kernel),
        "kernel_build": record,
        "accelerator": guest.accel,
        "accelerator_reason": guest.accel_reason,
        "timing_note": (
            "TCG: the guest's CPUs are emulated; times are not bare-metal times, relative "
            "effects of a knob on the same platform are still real kernel behaviour"
            if guest.accel == "tcg"
            else "KVM: hardware-virtualised guest"
        ),
        "guest": {k: v for k, v in asdict(guest).items() if k not in ("kernel", "sysctls")},
        "guest_boot_id": guest_result.get("boot_id"),
        "sysctls_requested": dict(guest.sysctls),
        "sysctls_read_back": guest_result.get("sysctls_read_back", {}),
        "guest_uname": guest_result.get("uname"),
        "guest_cgroup": guest_result.get("cgroup"),
        "guest_disk": guest_result.get("disk"),
        "vng_command": command,
        "vng_version": _tool_version([command[0], "--version"]),
        "qemu_version": _tool_version(["qemu-system-x86_64", "--version"]),
        "host": host or {"kernel_release": platform.release(), "machine": platform.machine()},
        "timings_s": timings,
    }


def _knob_check(run_dir: Path, prov: dict) -> list[dict] | str:
    """Each iteration's trace against the knobs the guest read back (knobs.check_iteration);
    a note instead when the build record has no CONFIG_HZ to turn milliseconds into µs."""
    from analysis.capture.knobs import check_iteration
    from analysis.ingest.captures import traces_below

    hz = prov["kernel_build"].get("config_hz")
    if not hz:
        return "not checked: build.json has no config_hz"
    knobs = {n: v["read_back"] for n, v in prov["sysctls_read_back"].items()}
    traces = traces_below(run_dir)
    return [{"iteration": t.parent.name, **check_iteration(t, knobs, hz)} for t in traces]


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


# In the shared directory while the guest runs: the pid (and process group) of vng, so
# that whoever finds the directory after a SIGKILLed host side can stop the guest.
VNG_PID = "vng.pid"
SHARE_PREFIX = ".mmlab-vm-"


def kill_orphan_guest(share: Path) -> bool:
    """Kill the guest a SIGKILLed host side left running in ``share`` (its ``vng.pid`` names
    vng's process group; only a process that still runs vng or qemu is killed, not one that
    reused the pid). True when one was killed."""
    try:
        pid = int((share / VNG_PID).read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return False
    if b"vng" not in cmdline and b"qemu" not in cmdline and b"virtme" not in cmdline:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


def _boot(guest: GuestConfig, command: list[str], share: Path) -> subprocess.Popen:
    """Run ``command`` (vng) to its end with its console in the share; returns the process."""
    from analysis.capture.run import signals_deferred

    with open(share / "console.log", "wb") as console:
        proc = None
        try:
            # A signal while vng starts is held until ``proc`` is known, so the guest it
            # started is killed too (it used to outlive a SIGTERM sent in that window).
            with signals_deferred():
                proc = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=console,
                    stderr=subprocess.STDOUT, cwd=PACKAGE_PARENT, start_new_session=True,
                    env=tool_env(command[0]),
                )  # fmt: skip
                (share / VNG_PID).write_text(f"{proc.pid}\n")
            proc.wait(timeout=guest.timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise InputError(
                "--guest-timeout", f"the guest ran longer than {guest.timeout_s:.0f} s"
            ) from None
        except BaseException:
            if proc is not None:
                _kill_group(proc)
            raise
    return proc


def _guest_result(guest: GuestConfig, share: Path, proc: subprocess.Popen) -> dict:
    """``result.json`` of a guest whose capture succeeded; InputError with the guest's
    message or the console's last lines otherwise."""
    result_path = share / "result.json"
    console_tail = "\n".join((share / "console.log").read_text(errors="replace")
                             .splitlines()[-15:])  # fmt: skip
    if not result_path.is_file():
        raise InputError(
            guest.kernel,
            f"the guest wrote no result (vng exit {proc.returncode}); console:\n{console_tail}",
        )
    result = json.loads(result_path.read_text())
    if result.get("error") or result.get("capture_rc") != 0:
        raise InputError(
            guest.kernel,
            f"the capture in the guest failed: {result.get('error') or result.get('stderr')}",
        )
    return result


def guest_evidence(share: Path) -> bytes:
    """What a failed guest left in its share, as a tar.gz: ``result.json`` (its message and,
    when the capture failed, the kernel log's tail), ``console.log`` and whatever part of
    the capture's tree it wrote (not the disk image). Empty when it left nothing."""
    kept = [share / "result.json", share / "console.log", share / "out"]
    if not any(p.exists() for p in kept):
        return b""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for path in kept:
            if path.exists():
                tar.add(path, arcname=path.name)
    return buf.getvalue()


def run_guest_capture(cfg, guest: GuestConfig) -> GuestResult:
    """Boot the guest, run ``cfg`` (a CaptureConfig) inside it, move its tree to
    ``cfg.out/cfg.run`` and write ``vm.json`` there. InputError when the guest's capture
    failed (its message and the console's last lines; ``evidence``: :func:`guest_evidence`);
    an OUT this call created is removed again then. One guest at a time per host: the host
    capture lock is held while it runs (two emulated guests would change each other's timing
    unrecorded)."""
    from analysis.capture.checks import check_arguments, check_out
    from analysis.capture.plan import MIB
    from analysis.capture.run import machine_lock

    record = read_build_record(guest.kernel)
    # The guest checks against its own MemAvailable; here, before booting, the limit must at
    # least fit half the guest's RAM, at the guest's (the kernel default's) dirty ratio.
    dirty_ratio = dict(guest.sysctls).get("vm.dirty_ratio", str(DEFAULT_DIRTY_RATIO))
    if not dirty_ratio.isdigit():
        raise InputError("--sysctl", f"vm.dirty_ratio must be an integer, got {dirty_ratio!r}")
    check_arguments(cfg, guest.memory_mb * MIB, int(dirty_ratio), for_guest=True)
    if cfg.pressure != guest.pressure:
        raise InputError(
            "--pressure", f"the capture's {cfg.pressure} and the guest's {guest.pressure} differ"
        )
    vng = vng_path()
    check_out(cfg.out, cfg.run)
    inner = capture_argv(cfg)
    created = not cfg.out.exists()
    with machine_lock():
        cfg.out.mkdir(parents=True, exist_ok=True)
        share = cfg.out / f"{SHARE_PREFIX}{os.getpid()}"
        share.mkdir()
        try:
            disk = share / "disk.img"
            with open(disk, "wb") as f:
                f.truncate(guest.disk_mb << 20)
            (share / "spec.json").write_text(json.dumps(guest_spec(guest, inner), indent=2))
            command = vng_command(guest, share, disk, sys.executable, vng)
            host = host_identity()
            t0 = time.monotonic()
            proc = _boot(guest, command, share)
            wall = time.monotonic() - t0
            result = _guest_result(guest, share, proc)
            run_dir = cfg.out / cfg.run
            shutil.move(share / "out" / cfg.run, run_dir)
        except BaseException as exc:
            if isinstance(exc, InputError):
                exc.evidence = guest_evidence(share)  # type: ignore[attr-defined]
            shutil.rmtree(share, ignore_errors=True)
            if created and not any(cfg.out.iterdir()):
                cfg.out.rmdir()
            raise
        shutil.rmtree(share, ignore_errors=True)
    host["loadavg_1_5_15_after"] = loadavg()
    timings = {
        "vng_wall": wall,
        "guest_boot": result["boot_s"],
        "guest_capture": result["capture_s"],
    }
    prov = {"command_line": list(cfg.command_line)}
    prov |= provenance(guest, record, command, result, timings, host)
    prov["knob_check"] = _knob_check(run_dir, prov)
    (run_dir / VM_JSON).write_text(json.dumps(prov, indent=2) + "\n")
    record = read_vm(run_dir)  # as written: what an analysis reads
    assert record is not None
    return GuestResult(run_dir, wall, result["boot_s"], result["capture_s"], record)
