"""``mmlab capture``: a stutterp-style workload, or the user's command, in a memory cgroup,
with ftrace, vmstat and PSI."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from analysis.errors import InputError

__all__ = ["register"]


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values:
        raise argparse.ArgumentTypeError("at least one worker count is needed")
    return values


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "capture",
        usage="mmlab capture OUT --run NAME --limit-mb MIB [options] [-- CMD [ARGS...]]",
        help="capture a stutterp-style reclaim workload or your command (root; tracefs; "
        "memory cgroup)",
        description=(
            "Run a stutterp-style workload (anon-latency probe, random file writers, anon hogs), "
            "or with '-- CMD [ARGS...]' your command instead, inside a memory cgroup with a "
            "mandatory limit, tracing vmscan/compaction events in a private tracefs instance "
            "and sampling /proc/vmstat, the cgroup's memory.stat and PSI. Writes an "
            "mmtests-style tree OUT/RUN/iter-N/. An iteration whose workload failed (a "
            "command's non-zero exit, a writer's error) ends the capture with exit 1 and is "
            "left out of analyses. Every setting changed "
            "is restored on exit, error, SIGINT, SIGTERM, SIGHUP or SIGQUIT (exit 128+signal); "
            "after SIGKILL, the next capture or --recover restores it from the on-disk journal "
            "and removes what the dead capture left, saying so on stderr."
        ),
    )
    p.add_argument("out", type=Path, nargs="?", help="output directory (on a disk filesystem)")
    p.add_argument("--run", help="run name (mmtests column heading; required unless --recover)")
    p.add_argument(
        "--recover",
        action="store_true",
        help="only undo what captures that died (SIGKILL) left: restore --set sysctls from "
        "the journal, kill and remove their cgroups, remove trace instances and work dirs",
    )
    p.add_argument("--iterations", type=int, default=3)
    p.add_argument("--workers", type=_int_list, default=(4, 8, 16), help="e.g. 4,8,16")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per worker count")
    p.add_argument(
        "--limit-mb",
        type=int,
        help="memory cgroup limit in MiB (mandatory; at most half of MemAvailable); under "
        "--pressure global the working set's budget, 0 for the guest's MemAvailable",
    )
    p.add_argument(
        "--events",
        default="",
        help="extra events to enable, comma-separated (e.g. mm_vmscan_lru_isolate or "
        "kmem/mm_page_alloc); the reclaim set is always on",
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="sysctl to set for the capture and restore after (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print each iteration's metadata as JSON")
    p.add_argument("--interval", type=float, default=1.0, help="monitor interval, seconds")
    p.add_argument("--buffer-kb", type=int, default=8192, help="per-CPU trace buffer size")
    p.add_argument("--compress", choices=("zst", "gz"), default="zst")
    p.add_argument("--warmup", type=float, default=1.0, help="writer warmup per worker count")
    p.add_argument("--probe-seconds", type=float, default=2.0, help="trace-volume probe length")
    p.add_argument(
        "--cwd",
        type=Path,
        help="directory CMD runs in (default: the current directory)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        help="seconds after which CMD is killed (and its iteration failed; default: none)",
    )
    p.add_argument(
        "--beside",
        action="store_true",
        help="run the built-in workload's phases too, while CMD runs (same cgroup and limit)",
    )
    p.add_argument(
        "--system-wide",
        action="store_true",
        help="trace every task, not only the workload and kswapd/kcompactd",
    )
    p.add_argument(
        "--slab-files",
        type=int,
        default=0,
        help="empty files a filer worker keeps looking up (dentry and inode slab for the "
        "shrinkers; 0: no filer)",
    )
    p.add_argument(
        "--negative-dentries",
        type=int,
        default=0,
        help="names that do not exist a second filer keeps looking up: a dcache of that many "
        "negative dentries for the superblock shrinker (0: none)",
    )
    p.add_argument(
        "--pressure",
        choices=("cgroup", "global"),
        default="cgroup",
        help="cgroup: reclaim at the cgroup's --limit-mb; global (only with --kernel): the "
        "guest's memory is the limit, --limit-mb the working set's budget (kswapd and direct "
        "reclaim)",
    )
    vm = p.add_argument_group(
        "patched kernel in a guest",
        "with --kernel the capture runs inside a virtme-ng guest booted with BZIMAGE (from "
        "`make kernels`, with build.json beside it); all pressure stays in the guest and "
        "OUT/RUN/vm.json records kernel build, patch hash, knobs and KVM or TCG",
    )
    vm.add_argument("--kernel", type=Path, metavar="BZIMAGE", help="boot this kernel in a VM")
    vm.add_argument(
        "--sysctl",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="sysctl to set in the guest before the capture (repeatable; needs --kernel)",
    )
    vm.add_argument("--accel", choices=("auto", "kvm", "tcg"), default="auto")
    vm.add_argument("--guest-memory-mb", type=int, default=2048)
    vm.add_argument("--guest-cpus", type=int, default=2)
    vm.add_argument("--guest-disk-mb", type=int, default=4096, help="sparse virtio disk")
    vm.add_argument("--guest-cgroup", type=int, choices=(1, 2), default=1)
    vm.add_argument("--guest-timeout", type=float, default=3600.0, help="seconds")
    vm.add_argument("--guest-fs", choices=("ext4", "xfs"), default="ext4", help="the disk's")
    vm.add_argument("--guest-write-mb-s", type=float, help="throttle the disk's writes (qemu)")
    vm.add_argument("--guest-read-mb-s", type=float, help="throttle the disk's reads (qemu)")
    # Filled by analysis.cli with what follows '--': the user's command.
    p.set_defaults(func=run, trailing_command=[])


def _limit_mb(args: argparse.Namespace) -> int:
    """``--limit-mb``; 0 under global pressure is the guest's MemAvailable, resolved in the
    guest (the host passes the 0 on)."""
    if args.pressure == "global" and args.limit_mb == 0 and args.kernel is None:
        from analysis.capture.checks import global_budget_mb
        from analysis.capture.guest import IN_GUEST

        if os.environ.get(IN_GUEST) == "1":
            return global_budget_mb()
    return args.limit_mb


def _events(text: str) -> tuple[str, ...]:
    """``mm_vmscan_lru_isolate`` stays bare (matched by name); ``sys/event`` kept as is."""
    return tuple(e.strip() for e in text.split(",") if e.strip())


def _recover(args: argparse.Namespace) -> int:
    from analysis.capture.run import machine_lock, preflight_machine, recover

    if args.out is not None or args.run is not None:
        raise InputError("--recover", "takes no OUT or --run: it only undoes leftovers")
    pre = preflight_machine()
    with machine_lock():
        done = recover(pre, [])
    print("mmlab capture: recovered" if done else "mmlab capture: nothing to recover")
    return 0


def _config(args: argparse.Namespace):
    """The :class:`~analysis.capture.run.CaptureConfig` the options give."""
    from analysis.capture import sysctl
    from analysis.capture.run import CaptureConfig
    from analysis.errors import InputError

    for option, value in (("OUT", args.out), ("--run", args.run), ("--limit-mb", args.limit_mb)):
        if value is None:
            raise InputError(option, "is required (unless --recover)")
    cfg = CaptureConfig(
        out=args.out,
        run=args.run,
        iterations=args.iterations,
        workers=args.workers,
        duration_s=args.duration,
        limit_mb=_limit_mb(args),
        events_include=_events(args.events),
        sets=tuple(sysctl.parse_assignment(s) for s in args.set),
        interval_s=args.interval,
        buffer_kb=args.buffer_kb,
        compression=args.compress,
        warmup_s=args.warmup,
        probe_s=args.probe_seconds,
        command_line=tuple(sys.argv),
        system_wide=args.system_wide,
        slab_files=args.slab_files,
        negative_dentries=args.negative_dentries,
        pressure=args.pressure,
        command=tuple(args.trailing_command),
        command_cwd=(args.cwd or Path.cwd()).absolute(),
        command_timeout_s=args.timeout,
        beside=args.beside,
    )
    if not cfg.command and (args.cwd is not None or args.timeout is not None or args.beside):
        raise InputError("--cwd/--timeout/--beside", "apply to a command given after '--'")
    return cfg


def run(args: argparse.Namespace) -> int:
    from analysis.capture.run import Interrupted, WorkloadFailed, capture
    from analysis.errors import InputError
    from analysis.report.capture import format_capture
    from analysis.report.json_output import dumps

    if args.recover:
        return _recover(args)
    cfg = _config(args)
    if args.kernel is not None:
        return _run_in_guest(cfg, args)
    if args.sysctl:
        raise InputError("--sysctl", "sets a guest's knobs: give --kernel (or use --set)")
    display = _Display()
    try:
        with display:
            metas = capture(cfg, display.update, display.report)
    except Interrupted as exc:
        cut = f"; {exc.incomplete} is incomplete (left out of analyses)" if exc.incomplete else ""
        print(f"mmlab capture: interrupted by {exc}; state restored{cut}", file=sys.stderr)
        return 128 + exc.signum
    except WorkloadFailed as exc:
        print(
            f"mmlab capture: {exc}; state restored; the iteration is kept, marked failed "
            "(left out of analyses)",
            file=sys.stderr,
        )
        return 1
    print(dumps([m.document for m in metas]) if args.json else format_capture(metas))
    return 0


def _run_in_guest(cfg, args: argparse.Namespace) -> int:
    from analysis.capture import sysctl
    from analysis.capture.exercised import mark_failed
    from analysis.capture.run import Interrupted, raise_on_signals
    from analysis.capture.vm import GuestConfig, choose_accel, run_guest_capture
    from analysis.report.json_output import dumps

    accel, reason = choose_accel(args.accel)
    guest = GuestConfig(
        kernel=args.kernel.resolve(),
        sysctls=tuple(sysctl.parse_assignment(s, option="--sysctl") for s in args.sysctl),
        accel=accel,
        accel_reason=reason,
        memory_mb=args.guest_memory_mb,
        cpus=args.guest_cpus,
        disk_mb=args.guest_disk_mb,
        cgroup=args.guest_cgroup,
        timeout_s=args.guest_timeout,
        pressure=args.pressure,
        filesystem=args.guest_fs,
        write_mb_s=args.guest_write_mb_s,
        read_mb_s=args.guest_read_mb_s,
    )
    try:
        # SIGTERM as SIGINT: the host side's cleanup kills the VM and removes the shared dir.
        with raise_on_signals():
            result = run_guest_capture(cfg, guest)
    except Interrupted as exc:
        print(f"mmlab capture: interrupted by {exc}; guest stopped", file=sys.stderr)
        return 128 + exc.signum
    failed = mark_failed(result.run_dir, result.vm, guest.pressure)
    for iteration, why in failed.items():
        print(f"mmlab capture: {iteration} FAILED (left out of analyses): {why}", file=sys.stderr)
    summary = {
        "run_dir": result.run_dir,
        "accelerator": accel,
        "wall_s": result.wall_s,
        "guest_boot_s": result.boot_s,
        "guest_capture_s": result.capture_s,
        "sysctls_read_back": result.vm.sysctls_read_back,
        "failed_iterations": failed,
    }
    if args.json:
        print(dumps(summary))
    else:
        print(
            f"{result.run_dir}: {accel.upper()} guest, boot {result.boot_s:.1f} s, capture "
            f"{result.capture_s:.1f} s, wall {result.wall_s:.1f} s; provenance in "
            f"{result.vm.path}" + (f"; {len(failed)} iteration(s) FAILED" if failed else "")
        )
    return 1 if failed else 0


class _Display:
    """A rich live line: stage, iteration, workers, elapsed, trace bytes, lost events."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = Console(stderr=True)
        self.live = Live(console=self.console, refresh_per_second=4, transient=True)
        self.messages: list[str] = []

    def __enter__(self) -> _Display:
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.live.__exit__(*exc)

    def report(self, line: str) -> None:
        """Print ``line`` now, above the live line (a removal of a dead capture's leftover)."""
        self.console.print(line, markup=False, highlight=False)

    def update(self, p) -> None:
        for m in p.messages[len(self.messages) :]:
            self.console.print(m)
            self.messages.append(m)
        self.live.update(
            f"[bold]{p.stage}[/] iter {p.iteration + 1}/{p.iterations} workers {p.workers} "
            f"{p.phase_elapsed_s:5.1f}/{p.phase_duration_s:.0f}s trace "
            f"{p.trace_bytes / 2**20:.1f} MiB raw {p.trace_bytes_compressed / 2**20:.1f} MiB "
            f"packed lost {p.lost_events} oom_kills {p.oom_kills}"
        )
