"""Write the README of one guest capture from what the capture recorded.

    .venv/bin/python kernels/readme.py data/vm-6.12/wb20

Everything printed comes from the capture's own files: vm.json (host command, kernel
build, knobs read back in the guest, accelerator, timings, per-iteration knob checks),
each iteration's mmlab.json (guest command, workload plan, trace accounting) and probe log.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path


def _probe(it: Path, workers: int) -> tuple[int, float, float]:
    lines = (it / "stutterp" / "logs" / f"mmap-latency-{workers}.log").read_text().splitlines()
    values = sorted(float(line.split()[1]) for line in lines if line and not line.startswith("#"))
    p99 = values[max(0, int(len(values) * 0.99) - 1)] if values else float("nan")
    return len(values), statistics.median(values) if values else float("nan"), p99


def readme(capture: Path) -> str:
    (run_dir,) = [p for p in capture.iterdir() if (p / "vm.json").is_file()]
    vm = json.loads((run_dir / "vm.json").read_text())
    its = sorted(run_dir.glob("iter-*"), key=lambda p: int(p.name[5:]))
    metas = [json.loads((it / "mmlab.json").read_text()) for it in its]
    m0 = metas[0]
    build = vm["kernel_build"]
    knobs = vm["sysctls_read_back"]
    accel = vm["accelerator"].upper()
    knob_text = (
        ", ".join(
            f"`{n}={v['read_back']}` (read back; requested {v['requested']})"
            for n, v in knobs.items()
        )
        or "none: every knob at its built-in default"
    )
    start = min(m["start_epoch_s"] for m in metas)
    end = max(m["end_epoch_s"] for m in metas)
    import datetime as dt

    when = (
        f"{dt.datetime.fromtimestamp(start, dt.UTC):%Y-%m-%d %H:%M:%S}–"
        f"{dt.datetime.fromtimestamp(end, dt.UTC):%H:%M:%S} UTC (guest clock)"
    )
    plan = m0["phases"][0]["plan"]
    mib = 1 << 20
    lines = [
        f"# {capture.name}: patched 6.12 kernel in a {accel} guest, {knob_text}",
        "",
        f"**Made under {accel}"
        + (
            " emulation** (no KVM: the host is itself a VM and nested KVM guests hung in the "
            "firmware). Times are emulated-CPU times, not bare-metal ones; the relative "
            "effect of a knob between captures of this sweep is real kernel behaviour."
            if accel == "TCG"
            else "**."
        )
        + " Compare only with the other captures of `data/vm-6.12/`.",
        "",
        f"Captured {when} with `kernels/sweep.sh` on the host, which ran:",
        "",
        "    " + " ".join(vm["command_line"]),
        "",
        "and inside the guest (analysis/capture/guest.py, after formatting the virtio disk "
        "and mounting the v1 memory cgroup):",
        "",
        "    " + " ".join(m0["command_line"]),
        "",
        f"- Kernel {build['kernel_release']} from Debian `{build['source_package']}` with "
        f"kernels/patches/ (series sha256 `{build['patch_series_sha256'][:16]}…`), "
        f"CONFIG_HZ={build['config_hz']}, built by `make kernels` with {build['compiler']}; "
        f"bzImage sha256 `{build['bzimage_sha256'][:16]}…`.",
        f"- Guest: `vng` ({vm['vng_version']}, {vm['qemu_version']}), {accel}, "
        f"{vm['guest']['cpus']} vCPUs, {vm['guest']['memory_mb']} MiB RAM, "
        f"{vm['guest']['disk_mb']} MiB sparse virtio-blk disk (ext4) for the writers' files, "
        f"memory cgroup v{vm['guest']['cgroup']}; host {vm['host']['kernel_release']}.",
        f"- Knobs: {knob_text}.",
        f"- Workload: {plan['workers']} workers (1 probe, {plan['writers']} writers x "
        f"{plan['file_bytes_per_writer'] / mib:.1f} MiB, {plan['hogs']} hogs x "
        f"{plan['anon_bytes_per_hog'] / mib:.1f} MiB) in a {plan['limit_bytes'] // mib} MiB "
        f"memory cgroup, {m0['config']['duration_s']:.0f} s per iteration after "
        f"{m0['config']['warmup_s']:.0f} s warmup, plus a filer looking up "
        f"{m0['config']['slab_files']} empty files (dentry and inode slab); "
        f"vm.dirty_ratio {m0['dirty_ratio_used']}.",
        f"- Timings (host-measured): guest boot {vm['timings_s']['guest_boot']:.1f} s, "
        f"capture in the guest {vm['timings_s']['guest_capture']:.1f} s, whole VM "
        f"{vm['timings_s']['vng_wall']:.1f} s.",
        "",
        "## Per iteration",
        "",
        "Throttles and shrinker calls are from the trace; `usec_timeout` is every value "
        "`mm_vmscan_throttled` printed for that reason. Divisor check: "
        "`mm_shrink_slab_start` calls whose `total_scan` equals "
        "`min(nr // d(priority) + delta, 2 x cache items)` for the knob's divisor d, of all "
        "calls; in brackets the calls that d and the default 2^priority tell apart.",
        "",
        "| iter | trace MB (zstd) | lost | OOM kills | throttles: reason usec_timeout x n "
        "| shrinker calls with nr > 0 | divisor check | probe mappings | median µs | p99 µs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    checks = {c["iteration"]: c for c in vm["knob_check"]}
    for it, meta in zip(its, metas, strict=True):
        c = checks[it.name]
        throttle = (
            "; ".join(
                f"{t['reason'].removeprefix('VMSCAN_THROTTLE_')} "
                f"{'/'.join(str(u) for u in t['seen_us'])} x {t['events']}"
                for t in c["throttle"]
            )
            or "none"
        )
        d = c["deferral"]
        n, median, p99 = _probe(it, plan["workers"])
        lines.append(
            f"| {it.name[5:]} | {meta['trace']['bytes_compressed'] / 1e6:.2f} "
            f"| {meta['trace']['lost_events']} | {meta['oom_kills']} | {throttle} "
            f"| {d['with_deferred']} of {d['calls']} "
            f"| {d['matching']}/{d['calls']} ({d['discriminating_matching']}/"
            f"{d['discriminating']}) | {n} | {median:.0f} | {p99:.0f} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        path = Path(arg)
        (path / "README.md").write_text(readme(path))
        print(f"wrote {path / 'README.md'}")
