"""The whole ``mmlab stalls`` analysis against the kernel's own Perl script, and its memory
as the trace grows (issue 32).

On the real capture of :mod:`benchmarks.bench_ftrace` (``benchmarks/work/capture.trace``,
recorded by :mod:`benchmarks.ftrace_capture` if missing), in ``PAIRS`` back-to-back rounds
(the machine is shared: only same-round ratios compare), each a whole process measured by
``wait4`` (wall, CPU = user + system of every thread, peak RSS):

- ``perl trace-vmscan-postprocess.pl < capture`` (Documentation/trace/postprocess of
  Debian's ``linux-source-6.12``, extracted from ``/usr/src/linux-source-6.12.tar.xz``,
  which ``make kernels``' apt step installs);
- ``mmlab stalls capture`` in an empty directory (cold: ingest and analysis);
- the same again (cached: the analysis results are read back);
- the same with the results removed but the ingest kept (the analysis alone).

Memory scaling: the capture concatenated 1×, 2× and 4× (``cat``: line numbers keep
counting, every line repeated, each pid going back in time at each seam), cold and
analysis-only, peak RSS of each. Every measured process runs inside a memory cgroup limited
to ``LIMIT_MB`` (this machine is shared). The 1/5/15-minute load averages are recorded
beside each figure.

Environment: ``MMLAB_BENCH_CAPTURE`` names another capture to use (e.g. the stand-in of
:mod:`benchmarks.standin_capture` where no capture can be recorded); ``MMLAB_BENCH_BEFORE``
names an ``mmlab`` executable of earlier code (``MMLAB_BENCH_BEFORE_COMMIT``: its commit),
measured in every round beside this one (cold, cached, analysis only), so that before and
after compare under the same load.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

from analysis.capture.cgroup import MemCgroup
from analysis.capture.run import preflight_machine
from benchmarks.bench_ftrace import HERE, REPO, WORK, _cpu_model, ensure_capture, timed
from benchmarks.standin_capture import STANDIN

PAIRS = 3
LIMIT_MB = 3072
COPIES = (1, 2, 4)
SOURCE = Path("/usr/src/linux-source-6.12.tar.xz")
PERL = WORK / "trace-vmscan-postprocess.pl"
MMLAB = REPO / ".venv" / "bin" / "mmlab"
# The analysis before issue 32 (commit c7daebe: whole frames, no results cache), on this
# capture and machine, 2026-11-28, one run each at load average 10.1-10.8 (not alternated):
# cold and with the ingest cached (there was no results cache).
BEFORE = {
    "commit": "c7daebe",
    "cold": {"wall_s": 14.96, "cpu_s": 5.34, "peak_rss_mb": 1472},
    "analysis_only": {"wall_s": 6.74, "cpu_s": 2.94, "peak_rss_mb": 1161},
}
TARGETS = {
    "cold_wall_ratio": 0.35,
    "cold_cpu_ratio": 0.5,
    "cached_cpu_s": 2.0,
    "peak_rss_mb": 1024,
    "scaling_rss_ratio_4x": 1.10,
}


@contextlib.contextmanager
def memory_limited(limit_mb: int = LIMIT_MB) -> Iterator[list[str]]:
    """A memory cgroup (``mmlab-<pid>``, which ``mmlab capture --recover`` removes if this
    process is killed) for every measured process: yields the argv prefix that joins it."""
    pre = preflight_machine()
    name = f"mmlab-{os.getpid()}"
    cg = MemCgroup.create(pre["cgroup_version"], pre["cgroup_root"], name, limit_mb << 20)
    try:
        yield ["sh", "-c", f'echo $$ > {cg.procs_file} && exec "$@"', "sh"]
    finally:
        cg.remove()


def perl_script() -> Path:
    """The kernel's script, extracted once from the linux-source tarball."""
    if not PERL.is_file():
        with tarfile.open(SOURCE) as tar:
            member = next(
                m for m in tar if m.name.endswith("/postprocess/trace-vmscan-postprocess.pl")
            )
            PERL.write_bytes(tar.extractfile(member).read())
    return PERL


def concatenated(capture: Path, copies: int) -> Path:
    """``copies`` copies of the capture end to end (the capture itself for 1)."""
    if copies == 1:
        return capture
    out = WORK / f"capture-x{copies}.trace"
    if not out.is_file() or out.stat().st_size != capture.stat().st_size * copies:
        with out.open("wb") as sink:
            for _ in range(copies):
                with capture.open("rb") as src:
                    shutil.copyfileobj(src, sink, 64 << 20)
    return out


def _drop_results(cwd: Path) -> None:
    """Remove the analysis results, keep the ingest (the analysis alone runs next)."""
    for results in (cwd / "build" / "ingest").glob("*/analysis-*"):
        shutil.rmtree(results)


def stalls_runs(trace: Path, join: list[str], *, cached: bool = True, mmlab: Path = MMLAB) -> dict:
    """``mmlab stalls`` of ``trace`` (run through ``join``): cold in an empty directory,
    then cached, then with only the ingest cached."""
    with tempfile.TemporaryDirectory(dir=WORK) as tmp:
        cwd = Path(tmp)
        argv = [*join, str(mmlab), "stalls", str(trace)]
        runs = {"cold": timed(argv, cwd)}
        if cached:
            runs["cached"] = timed(argv, cwd)
        _drop_results(cwd)
        runs["analysis_only"] = timed(argv, cwd)
    return runs


def run(out_dir: Path) -> dict:
    """Run the benchmark; write ``stalls.json`` and ``stalls.md`` into ``out_dir``."""
    WORK.mkdir(exist_ok=True)
    chosen = os.environ.get("MMLAB_BENCH_CAPTURE")
    capture = Path(chosen).resolve() if chosen else ensure_capture()
    before = os.environ.get("MMLAB_BENCH_BEFORE")
    script = perl_script()
    pairs = []
    with memory_limited() as join:
        for _ in range(PAIRS):
            perl = timed([*join, "perl", str(script)], stdin=capture)
            mmlab = stalls_runs(capture, join)
            earlier = {"before": stalls_runs(capture, join, mmlab=Path(before))} if before else {}
            pairs.append(
                {
                    "perl": perl,
                    **mmlab,
                    **earlier,
                    "cold_wall_ratio": mmlab["cold"]["wall_s"] / perl["wall_s"],
                    "cold_cpu_ratio": mmlab["cold"]["cpu_s"] / perl["cpu_s"],
                }
            )
        scaling = {
            copies: stalls_runs(concatenated(capture, copies), join, cached=False)
            for copies in COPIES
        }
    for copies in COPIES[1:]:
        concatenated(capture, copies).unlink()
    results = {
        "machine": {"cpus": os.cpu_count(), "cpu_model": _cpu_model()},
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
        ).stdout.strip(),
        "capture": {
            "path": str(capture.relative_to(HERE.parent)),
            "bytes": capture.stat().st_size,
            "standin": capture == STANDIN,
        },
        "pairs": pairs,
        "median": {
            "cold_wall_ratio": statistics.median(p["cold_wall_ratio"] for p in pairs),
            "cold_cpu_ratio": statistics.median(p["cold_cpu_ratio"] for p in pairs),
            "cached_cpu_s": statistics.median(p["cached"]["cpu_s"] for p in pairs),
            "peak_rss_mb": max(
                p[k]["peak_rss_mb"] for p in pairs for k in ("cold", "cached", "analysis_only")
            ),
        },
        "scaling": scaling,
        "memory_limit_mb": LIMIT_MB,
        "before": {"commit": os.environ.get("MMLAB_BENCH_BEFORE_COMMIT", "?")}
        if before
        else BEFORE,
        "scaling_rss_ratio_4x": {
            kind: scaling[4][kind]["peak_rss_mb"] / scaling[1][kind]["peak_rss_mb"]
            for kind in ("cold", "analysis_only")
        },
        "targets": TARGETS,
    }
    (out_dir / "stalls.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / "stalls.md").write_text(markdown(results))
    return results


def _load(run: dict) -> str:
    return ", ".join(f"{v:.2f}" for v in run["load_avg_before"])


def _before_lines(r: dict) -> list[str]:
    """The code before against this one: medians of the rounds' runs when it was measured
    in them (``MMLAB_BENCH_BEFORE``), else the figures of commit c7daebe on the real
    capture."""
    if "before" not in r["pairs"][0]:
        return [
            f"Before issue 32 (commit {BEFORE['commit']}, the real capture on this machine "
            "type, one run each at load 10.1-10.8): cold "
            f"{BEFORE['cold']['wall_s']} s wall, {BEFORE['cold']['cpu_s']} s CPU, "
            f"{BEFORE['cold']['peak_rss_mb']} MB; ingest cached "
            f"{BEFORE['analysis_only']['wall_s']} s, {BEFORE['analysis_only']['cpu_s']} s CPU, "
            f"{BEFORE['analysis_only']['peak_rss_mb']} MB (it had no results cache)."
        ]
    commit = r["before"]["commit"]
    lines = [
        f"Commit {commit} (the code before) measured in the same rounds, medians:",
        "",
        f"| run | {commit} CPU s | CPU s | {commit} peak RSS MB | peak RSS MB |",
        "|---|---:|---:|---:|---:|",
    ]
    for kind in ("cold", "cached", "analysis_only"):
        was, now = ([p["before"][kind] for p in r["pairs"]], [p[kind] for p in r["pairs"]])
        lines.append(
            f"| {kind.replace('_', ' ')} | "
            + " | ".join(
                f"{statistics.median(run[key] for run in runs):.{digits}f}"
                for key, digits in (("cpu_s", 2), ("peak_rss_mb", 0))
                for runs in (was, now)
            )
            + " |"
        )
    return lines


def markdown(r: dict) -> str:
    """The results as the Markdown committed beside them."""
    mib = r["capture"]["bytes"] / 2**20
    standin = (
        " It is the stand-in of `benchmarks/standin_capture.py` (the bundled 6.12 captures "
        "end to end in time order, no `mm_vmscan_lru_isolate`), read through "
        "`MMLAB_BENCH_CAPTURE`: the machine had no tracefs of its own to record the real "
        "one, so the figures compare with each other, not with runs on the real capture."
        if r["capture"].get("standin")
        else ""
    )
    lines = [
        "# `mmlab stalls` against trace-vmscan-postprocess.pl (issue 32)",
        "",
        f"Commit {r['commit']}; {r['machine']['cpus']} cores of {r['machine']['cpu_model']}; "
        f"capture `{r['capture']['path']}`, {r['capture']['bytes']:,} bytes ({mib:.0f} MiB)."
        f"{standin} Whole processes (`wait4`): CPU is user + system of every thread. The "
        "machine is shared: load averages (1/5/15 min) before each run are beside it; only "
        "ratios within a round compare. Made by `python -m benchmarks.run --only stalls`.",
        "",
        "| round | run | wall s | CPU s | peak RSS MB | load before |",
        "|---|---|---:|---:|---:|---|",
    ]
    before = r["before"]["commit"]
    for i, p in enumerate(r["pairs"], 1):
        runs = {kind: p[kind] for kind in ("perl", "cold", "cached", "analysis_only")}
        runs |= {f"{before} {kind}": run for kind, run in p.get("before", {}).items()}
        for kind, run in runs.items():
            lines.append(
                f"| {i} | {kind.replace('_', ' ')} | {run['wall_s']:.2f} | {run['cpu_s']:.2f} | "
                f"{run['peak_rss_mb']:.0f} | {_load(run)} |"
            )
    m, t = r["median"], r["targets"]

    def met(value: float, target: float) -> str:
        return "met" if value <= target else "**not met**"

    lines += [
        "",
        "Medians of the rounds against the targets of issue 32:",
        "",
        "| measure | value | target | |",
        "|---|---:|---:|---|",
        f"| cold wall / Perl wall | {m['cold_wall_ratio']:.2f} | ≤ {t['cold_wall_ratio']} | "
        f"{met(m['cold_wall_ratio'], t['cold_wall_ratio'])} |",
        f"| cold CPU / Perl CPU | {m['cold_cpu_ratio']:.2f} | ≤ {t['cold_cpu_ratio']} | "
        f"{met(m['cold_cpu_ratio'], t['cold_cpu_ratio'])} |",
        f"| cached CPU s | {m['cached_cpu_s']:.2f} | ≤ {t['cached_cpu_s']} | "
        f"{met(m['cached_cpu_s'], t['cached_cpu_s'])} |",
        f"| peak RSS MB (largest) | {m['peak_rss_mb']:.0f} | ≤ {t['peak_rss_mb']} | "
        f"{met(m['peak_rss_mb'], t['peak_rss_mb'])} |",
        "",
        *_before_lines(r),
        "",
        "## Memory as the trace grows",
        "",
        "The capture concatenated end to end (`cat`: 2× and 4× repeat every line, each pid "
        "goes back in time at each seam, and the analysis reports the repeated lines). "
        f"Every process ran in a memory cgroup limited to {r['memory_limit_mb']} MB.",
        "",
        "| copies | run | wall s | CPU s | peak RSS MB | load before |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for copies, runs in r["scaling"].items():
        for kind, run in runs.items():
            lines.append(
                f"| {copies} | {kind.replace('_', ' ')} | {run['wall_s']:.2f} | "
                f"{run['cpu_s']:.2f} | {run['peak_rss_mb']:.0f} | {_load(run)} |"
            )
    ratio = r["scaling_rss_ratio_4x"]
    lines += [
        "",
        f"Peak RSS 4× / 1×: cold {ratio['cold']:.2f}, analysis only "
        f"{ratio['analysis_only']:.2f} (target ≤ {t['scaling_rss_ratio_4x']:.2f}).",
        "",
    ]
    return "\n".join(lines)
