"""Write the README of one guest capture, or of an executed experiment plan, from what
the capture recorded.

    .venv/bin/python kernels/readme.py data/vm-6.12/wb20
    .venv/bin/python kernels/readme.py data/vm-6.12-lab/pilot   # has order.json

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


def _throttles(check: dict) -> str:
    return (
        "; ".join(
            f"{t['reason'].removeprefix('VMSCAN_THROTTLE_')} "
            f"{'/'.join(str(u) for u in t['seen_us'])} x {t['events']}"
            for t in check.get("throttle", [])
        )
        or "none"
    )


def experiment_readme(out: Path) -> str:
    """README of an executed plan (``mmlab experiment run``): the plan, the order, the
    kernel and guest, and one row per boot of every setting, in the order they ran."""
    import datetime as dt

    order = json.loads((out / "order.json").read_text())
    journal = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    boots = []
    for record in out.glob("*/iter-*/boot.json"):
        boot = json.loads(record.read_text())
        meta = json.loads((record.parent / "mmlab.json").read_text())
        boots.append((boot["position"], record.parent, boot, meta))
    boots.sort(key=lambda b: b[0])
    vm0 = boots[0][2]["vm"]
    build = vm0["kernel_build"]
    first = dt.datetime.fromisoformat(journal[0]["t"])
    last = dt.datetime.fromisoformat(journal[-1]["t"])
    events: dict[str, int] = {}
    for e in journal:
        events[e["event"]] = events.get(e["event"], 0) + 1
    # Every failed attempt is in the journal (failed/<run>.* keeps only a run's last one's
    # evidence). One run again with --retry-failed and finished is one of the boots.
    failed = [e for e in journal if e["event"] == "failed"]
    finished = {b["run_id"]: f"{it.parent.name}/{it.name}" for _, it, b, _ in boots}
    lines = [
        f"# {order['plan']}: a designed experiment on the patched 6.12 kernel "
        f"({vm0['accelerator'].upper()} guests, one boot per run)",
        "",
        "**Made under TCG emulation** (no KVM: the host is itself a VM). Times are "
        "emulated-CPU times; compare only runs of this platform. Every number below comes "
        "from the runs' own files (`plan.yaml`, `order.json`, `journal.jsonl`, each "
        "iteration's `boot.json` and `mmlab.json`); this README was written by "
        "`kernels/readme.py`.",
        "",
        f"Executed {first:%Y-%m-%d %H:%M}–{last:%H:%M} UTC with `mmlab experiment run "
        f"kernels/plans/{order['plan']}.yaml OUT` (plan sha256 `{order['plan_digest'][:16]}…`, "
        f"seed {order['seed']}): {len(order['runs'])} runs, {order['boots_per_setting']} "
        f"boot(s) per setting in randomised blocks. Primary endpoint (named before the runs): "
        f"`{order['primary_endpoint']}`"
        + (f"; secondary: {', '.join(order['secondary_endpoints'])}." if order["secondary_endpoints"] else "."),
        "",
        f"- Kernel {build['kernel_release']} from Debian `{build['source_package']}` with "
        f"kernels/patches/ (series sha256 `{build['patch_series_sha256'][:16]}…`), "
        f"CONFIG_HZ={build['config_hz']}, bzImage sha256 `{build['bzimage_sha256'][:16]}…`.",
        f"- Guests: `vng` ({vm0['vng_version']}, {vm0['qemu_version']}), "
        f"{vm0['guest']['cpus']} vCPUs; host {vm0['host']['hostname']} "
        f"({vm0['host']['cpu']['model']}, {vm0['host']['cpu']['logical_cpus']} CPUs, kernel "
        f"{vm0['host']['kernel_release']}), shared with other work: its load is in each row.",
        "- Journal: " + ", ".join(f"{n} {e}" for e, n in events.items())
        + (f"; failed attempts (left out; listed at the end): {len(failed)} attempt(s) of "
           f"{len({e['run'] for e in failed})} run(s), "
           f"{len({e['run'] for e in failed} & set(finished))} of those run again and finished"
           if failed else "; no failed run."),
        "",
        "## Settings",
        "",
    ]
    for s in order["settings"]:
        params = ", ".join(f"{k}={v}" for k, v in s["params"].items())
        lines.append(f"- `{s['name']}`: {params}")
    lines += [
        "",
        "## Boots, in the order they ran",
        "",
        "Throttles and shrinker calls are from each boot's trace (`knob_check` in boot.json); "
        "load is the host's 1-minute load average when the guest started.",
        "",
        "| pos | block | setting/iteration | guest boot id | host load | VM wall s | throttles: "
        "reason usec_timeout x n | shrinker calls with nr > 0 | OOM kills | probe median µs "
        "| p99 µs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for position, it, boot, meta in boots:
        vm = boot["vm"]
        d = boot["knob_check"].get("deferral", {})
        n, median, p99 = _probe(it, boot["params"]["workers"])
        lines.append(
            f"| {position} | {boot['block']} | {it.parent.name}/{it.name} "
            f"| `{(vm.get('guest_boot_id') or '?')[:8]}` | {vm['host']['loadavg_1_5_15'][0]:.1f} "
            f"| {vm['timings_s']['vng_wall']:.0f} | {_throttles(boot['knob_check'])} "
            f"| {d.get('with_deferred', 0)} of {d.get('calls', 0)} | {meta.get('oom_kills', 0)} "
            f"| {median:.0f} | {p99:.0f} |"
        )
    if failed:
        lines += ["", "## Failed attempts (journal.jsonl; the last one's evidence in failed/)", ""]
    for e in failed:
        again = finished.get(e["run"])
        note = f"run again and finished: {again}" if again else "not run again"
        # The guest console follows the reason in the journal: its first line is enough here.
        reason = e["reason"].split("; console:")[0].splitlines()[0]
        lines.append(f"- {e['t'][:19]} `{e['run']}` ({note}): {reason}")
    notes = out / "NOTES.md"
    if notes.is_file():
        lines += ["", "## Notes (by hand, in NOTES.md)", "", notes.read_text().strip()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        path = Path(arg)
        text = experiment_readme(path) if (path / "order.json").is_file() else readme(path)
        (path / "README.md").write_text(text)
        print(f"wrote {path / 'README.md'}")
