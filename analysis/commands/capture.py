"""``mmlab capture``: a stutterp-style workload in a memory cgroup, with ftrace and vmstat."""

from __future__ import annotations

import argparse
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
        help="capture a stutterp-style reclaim workload (root; tracefs; memory cgroup)",
        description=(
            "Run a stutterp-style workload (anon-latency probe, random file writers, anon hogs) "
            "inside a memory cgroup with a mandatory limit, tracing vmscan/compaction events "
            "in a private tracefs instance and sampling /proc/vmstat and the cgroup's "
            "memory.stat. Writes an mmtests-style tree OUT/RUN/iter-N/. Every setting changed "
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
        help="memory cgroup limit in MiB (mandatory; at most half of MemAvailable)",
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
        "--system-wide",
        action="store_true",
        help="trace every task, not only the workload and kswapd/kcompactd",
    )
    p.set_defaults(func=run)


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


def run(args: argparse.Namespace) -> int:
    from analysis.capture import sysctl
    from analysis.capture.run import CaptureConfig, Interrupted, capture
    from analysis.report.capture import format_capture
    from analysis.report.json_output import dumps

    if args.recover:
        return _recover(args)
    for option, value in (("OUT", args.out), ("--run", args.run), ("--limit-mb", args.limit_mb)):
        if value is None:
            raise InputError(option, "is required (unless --recover)")
    cfg = CaptureConfig(
        out=args.out,
        run=args.run,
        iterations=args.iterations,
        workers=args.workers,
        duration_s=args.duration,
        limit_mb=args.limit_mb,
        events_include=_events(args.events),
        sets=tuple(sysctl.parse_assignment(s) for s in args.set),
        interval_s=args.interval,
        buffer_kb=args.buffer_kb,
        compression=args.compress,
        warmup_s=args.warmup,
        probe_s=args.probe_seconds,
        command_line=tuple(sys.argv),
        system_wide=args.system_wide,
    )
    display = _Display()
    try:
        with display:
            metas = capture(cfg, display.update, display.report)
    except Interrupted as exc:
        cut = f"; {exc.incomplete} is incomplete (left out of analyses)" if exc.incomplete else ""
        print(f"mmlab capture: interrupted by {exc}; state restored{cut}", file=sys.stderr)
        return 128 + exc.signum
    print(dumps(metas) if args.json else format_capture(metas))
    return 0


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
