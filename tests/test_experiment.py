"""``mmlab experiment``: plan files, the randomised block order, and resumable execution.

No VM boots here. Execution runs against a stand-in ``vng`` (it writes what the guest side
would: a result.json and a one-iteration tree whose trace shows reclaim and the knobs) or a
stand-in runner; the real boots are the bundled pilot's (data/vm-6.12-pilot/README.md).
"""

from __future__ import annotations

import collections
import hashlib
import io
import itertools
import json
import os
import signal
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
from scipy import stats

from analysis.capture import design, exercised, experiment
from analysis.capture.run import Interrupted
from analysis.errors import InputError

PLAN = """\
name: tiny
kernel: kernels/bzImage
seed: 7
boots_per_setting: 2
accel: tcg
primary_endpoint: reclaim_velocity
secondary_endpoints: [reclaim_efficiency]
defaults: {workers: 4, duration: 1, warmup: 0.5, probe_seconds: 0.5, limit_mb: 128}
factors:
  knob:
    default: {}
    wb20: {sysctl: {vm.reclaim_throttle_writeback_ms: 20}}
"""


def plan_file(tmp_path: Path, text: str = PLAN) -> Path:
    path = tmp_path / "plan.yaml"
    path.write_text(text)
    return path


# --- plan files -------------------------------------------------------------------------


def test_settings_are_the_cross_product_of_levels(tmp_path):
    text = PLAN.replace(
        "factors:\n",
        "factors:\n  pressure:\n    memcg1: {cgroup: 1}\n    global: {pressure: global}\n",
    )
    plan = design.load_plan(plan_file(tmp_path, text))
    assert [s.name for s in plan.settings] == [
        "memcg1-default", "memcg1-wb20", "global-default", "global-wb20",
    ]  # fmt: skip
    wb = plan.setting("global-wb20")
    assert wb.params == {
        "workers": 4, "duration": 1, "warmup": 0.5, "probe_seconds": 0.5, "limit_mb": 128,
        "pressure": "global", "sysctl": {"vm.reclaim_throttle_writeback_ms": "20"},
    }  # fmt: skip
    assert plan.kernel == (tmp_path / "kernels" / "bzImage").resolve()
    excluded = text + "exclude:\n  - {pressure: global, knob: wb20}\n"
    names = [s.name for s in design.load_plan(plan_file(tmp_path, excluded)).settings]
    assert names == ["memcg1-default", "memcg1-wb20", "global-default"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("primary_endpoint: reclaim_velocity\n", ""), "missing 'primary_endpoint': the primary"),
        (("reclaim_velocity", "reclaim_speed"), "'reclaim_speed' is not an endpoint"),
        (("[reclaim_efficiency]", "[reclaim_velocity]"), "both the primary and a secondary"),
        (("wb20: {", "wb20: {colour: red, "), "unknown parameter 'colour'"),
        (("seed: 7", "seed: seven"), "seed must be an integer"),
        (("boots_per_setting: 2", "boots_per_setting: 0"), "positive integer"),
        (("{workers: 4,", "{workers: four,"), "workers must be an integer"),
        (("{workers: 4,", "{pressure: nearby, workers: 4,"), "pressure must be one of"),
        (("    default: {}", "    de-fault: {}"), "without '-'"),
        (("seed: 7", "seed: 7\ncolour: red"), "unknown key 'colour'"),
        (("factors:", "factors: [\n"), "not YAML"),
    ],
)
def test_a_wrong_plan_names_what_is_wrong(tmp_path, edit, message):
    with pytest.raises(InputError, match=message) as err:
        design.load_plan(plan_file(tmp_path, PLAN.replace(*edit)))
    assert err.value.path == tmp_path / "plan.yaml"


def test_two_levels_may_not_set_the_same_parameter(tmp_path):
    text = PLAN + "  speed:\n    slow: {sysctl: {vm.reclaim_throttle_writeback_ms: 50}}\n"
    with pytest.raises(InputError, match="knob=wb20 and speed=slow both set sysctl"):
        design.load_plan(plan_file(tmp_path, text))


def test_every_block_holds_every_setting_once_and_the_order_is_the_seeds(tmp_path):
    text = PLAN.replace("boots_per_setting: 2", "boots_per_setting: 10").replace(
        "    wb20:", "    a: {}\n    b: {}\n    c: {}\n    wb20:"
    )
    plan = design.load_plan(plan_file(tmp_path, text))
    runs = design.planned_runs(plan)
    assert len(runs) == 50 and [r.position for r in runs] == list(range(50))
    names = sorted(s.name for s in plan.settings)
    orders = set()
    for block in range(10):
        in_block = [r.setting for r in runs if r.block == block]
        assert sorted(in_block) == names
        orders.add(tuple(in_block))
    assert len(orders) > 1  # reshuffled per block, not one order repeated
    assert design.planned_runs(design.load_plan(plan_file(tmp_path, text))) == runs
    other = design.load_plan(plan_file(tmp_path, text.replace("seed: 7", "seed: 8")))
    assert design.planned_runs(other) != runs


def test_block_order_is_uniform_over_permutations():
    """Known truth: a fair shuffle gives each of the 3! orders with probability 1/6."""
    counts = collections.Counter(tuple(design.block_order(3, seed, 0)) for seed in range(6000))
    assert set(counts) == set(itertools.permutations(range(3)))
    assert stats.chisquare(list(counts.values())).pvalue > 1e-3


# --- what a run must show ---------------------------------------------------------------


def test_a_run_without_reclaim_or_global_reclaim_is_failed():
    assert exercised.trace_problems({"mm_vmscan_throttled": 3}, "cgroup")[0].startswith(
        "no reclaim in the trace"
    )
    memcg_only = {"mm_vmscan_memcg_reclaim_begin": 5}
    assert exercised.trace_problems(memcg_only, "cgroup") == []
    (why,) = exercised.trace_problems(memcg_only, "global")
    assert "neither kswapd woke nor" in why
    assert exercised.trace_problems({"mm_vmscan_kswapd_wake": 1}, "global") == []


def test_knob_disagreement_is_a_failure_and_absence_is_not():
    check = {
        "throttle": [
            {"reason": "VMSCAN_THROTTLE_WRITEBACK", "events": 4, "expected_us": 20000,
             "seen_us": [100000], "agrees": False},
            {"reason": "VMSCAN_THROTTLE_NOPROGRESS", "events": 0, "expected_us": 4000,
             "seen_us": [], "agrees": False},
        ],
        "deferral": {"divisor": "1", "calls": 10, "matching": 7},
    }  # fmt: skip
    found = exercised._knob_problems(check)
    assert len(found) == 2
    assert "usec_timeout [100000] where the knobs give 20000" in found[0]
    assert "3 of 10 mm_shrink_slab_start calls disagree" in found[1]


# --- execution with a stand-in runner -----------------------------------------------------


def _archive(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Runner:
    """Counts calls per run; fails the runs in ``fail``; raises Interrupted at call
    ``interrupt_at`` (0-based); ``die_after_install`` raises once the first run is in."""

    def __init__(self, fail=(), interrupt_at=None, kernel_build=None):
        self.calls = collections.Counter()
        self.fail = set(fail)
        self.interrupt_at = interrupt_at
        self.kernel_build = kernel_build

    def __call__(self, spec, work):
        if self.interrupt_at is not None and sum(self.calls.values()) == self.interrupt_at:
            raise Interrupted(signal.SIGINT)
        self.calls[spec["run_id"]] += 1
        ok = spec["run_id"] not in self.fail
        boot = {
            "run_id": spec["run_id"], "position": spec["position"], "block": spec["block"],
            "setting": spec["setting"], "levels": spec["levels"], "plan": spec["plan"],
            "plan_digest": spec["plan_digest"], "params": spec["params"],
            "vm": {"accelerator": "tcg", "guest_boot_id": f"boot-{spec['run_id']}",
                   "host": {"hostname": "h1"}},
            "knob_check": {"trace": "ftrace-stutterp.zst"},
        }  # fmt: skip
        if self.kernel_build is not None:
            boot["vm"]["kernel_build"] = self.kernel_build
        files = {
            "kernel.version": "Linux 6.12.117\n",
            "mmlab.json": json.dumps({"tool": "mmlab capture"}),
        }
        return experiment.RunOutcome(spec["run_id"], ok, "" if ok else "no reclaim", boot,
                                     _archive(files), 60.0)  # fmt: skip


def tree(out: Path) -> dict[str, str]:
    """setting/iter-K -> run id of every installed boot."""
    return {
        str(p.parent.relative_to(out)): json.loads(p.read_text())["run_id"]
        for p in out.glob("*/iter-*/boot.json")
    }


def test_execute_installs_one_boot_per_iteration_in_the_plans_order(tmp_path):
    plan = design.load_plan(plan_file(tmp_path))
    out = tmp_path / "out"
    runner = Runner()
    status = experiment.execute(plan, out, runner=runner)
    runs = design.planned_runs(plan)
    assert len(status.done) == 4 and not status.failed and not status.pending
    assert list(runner.calls) == [r.run_id for r in runs] and set(runner.calls.values()) == {1}
    installed = tree(out)
    assert sorted(installed) == ["default/iter-0", "default/iter-1", "wb20/iter-0", "wb20/iter-1"]
    # iterations numbered in the order the runs finished
    for setting in ("default", "wb20"):
        mine = [r.run_id for r in runs if r.setting == setting]
        assert [installed[f"{setting}/iter-{k}"] for k in range(2)] == mine
    vm = json.loads((out / "wb20" / "vm.json").read_text())
    assert vm["accelerator"] == "tcg" and vm["one_boot_per_iteration"]
    wb20 = [f"boot-{r.run_id}" for r in runs if r.setting == "wb20"]
    assert [b["guest_boot_id"] for b in vm["boots"]] == wb20
    assert (out / "plan.yaml").read_text() == PLAN
    order = json.loads((out / "order.json").read_text())
    assert order["primary_endpoint"] == "reclaim_velocity" and len(order["runs"]) == 4
    events = [
        json.loads(line)["event"] for line in (out / "journal.jsonl").read_text().splitlines()
    ]
    assert events == ["start", "done"] * 4
    # the tree reads as an ordinary capture: two runs, two iterations each
    from analysis.ingest import mmtests

    found = mmtests.find_runs(out)
    assert [(r.name, len(r.iterations)) for r in found] == [("default", 2), ("wb20", 2)]


def test_an_interrupted_plan_resumes_without_repeating_or_losing_a_run(tmp_path):
    plan = design.load_plan(plan_file(tmp_path))
    out = tmp_path / "out"
    first = Runner(interrupt_at=2)
    with pytest.raises(Interrupted):
        experiment.execute(plan, out, runner=first)
    assert len(tree(out)) == 2
    assert experiment.experiment_status(out).pending == tuple(
        r.run_id for r in design.planned_runs(plan)[2:]
    )
    second = Runner()
    experiment.execute(plan, out, runner=second)
    assert set(first.calls) | set(second.calls) == {r.run_id for r in design.planned_runs(plan)}
    assert not set(first.calls) & set(second.calls)
    reference = tmp_path / "ref"
    experiment.execute(plan, reference, runner=Runner())
    assert tree(out) == tree(reference)


def test_a_run_installed_but_not_journalled_is_not_run_again(tmp_path, monkeypatch):
    plan = design.load_plan(plan_file(tmp_path))
    out = tmp_path / "out"
    real = experiment.Journal.write

    def die_on_first_done(self, run_id, event, **fields):
        if event == "done":
            raise Interrupted(signal.SIGKILL)  # as if killed between install and journal
        real(self, run_id, event, **fields)

    monkeypatch.setattr(experiment.Journal, "write", die_on_first_done)
    with pytest.raises(Interrupted):
        experiment.execute(plan, out, runner=Runner())
    monkeypatch.setattr(experiment.Journal, "write", real)
    runner = Runner()
    experiment.execute(plan, out, runner=runner)
    first = design.planned_runs(plan)[0].run_id
    assert first not in runner.calls and len(tree(out)) == 4


def test_failed_runs_are_kept_aside_with_their_reason_and_retried_on_request(tmp_path):
    plan = design.load_plan(plan_file(tmp_path))
    out = tmp_path / "out"
    bad = design.planned_runs(plan)[1].run_id
    status = experiment.execute(plan, out, runner=Runner(fail={bad}))
    assert status.failed == {bad: "no reclaim"} and len(status.done) == 3
    assert (out / "failed" / f"{bad}.txt").read_text() == "no reclaim\n"
    assert bad not in tree(out).values()
    again = Runner()
    experiment.execute(plan, out, runner=again)
    assert not again.calls  # a failed run stays failed
    experiment.execute(plan, out, runner=again, retry_failed=True)
    assert list(again.calls) == [bad]
    assert not experiment.experiment_status(out).failed


def test_a_plan_resumed_on_another_kernel_is_refused(tmp_path):
    """A later session rebuilds the kernel from a newer Debian point release: resuming with
    it would mix two kernels into the settings, so the resume names what differs; the
    image the finished runs booted resumes."""
    plan = design.load_plan(plan_file(tmp_path))
    build = {"kernel_release": "6.12.118", "source_package": "linux-source-6.12 6.12.118-1",
             "patch_series_sha256": "ab" * 32, "compiler": "gcc 12", "config_sha256": "cd" * 32,
             "bzimage_sha256": "ef" * 32}  # fmt: skip
    plan.kernel.parent.mkdir(parents=True, exist_ok=True)
    plan.kernel.write_bytes(b"image")
    record = plan.kernel.parent / "build.json"
    out = tmp_path / "out"
    with pytest.raises(Interrupted):
        experiment.execute(plan, out, runner=Runner(interrupt_at=1, kernel_build=build))
    newer = build | {"source_package": "linux-source-6.12 6.12.119-1", "bzimage_sha256": "01" * 32}
    record.write_text(json.dumps(newer))
    with pytest.raises(InputError, match=r"6\.12\.118-1 .* vs linux-source-6\.12 6\.12\.119-1"):
        experiment.execute(plan, out, runner=Runner(kernel_build=newer))
    assert len(tree(out)) == 1
    record.write_text(json.dumps(build))
    assert len(experiment.execute(plan, out, runner=Runner(kernel_build=build)).done) == 4


def test_another_plan_into_the_same_out_is_refused(tmp_path):
    out = tmp_path / "out"
    experiment.execute(design.load_plan(plan_file(tmp_path)), out, runner=Runner())
    other = design.load_plan(plan_file(tmp_path, PLAN.replace("seed: 7", "seed: 9")))
    with pytest.raises(InputError, match="started from another plan"):
        experiment.execute(other, out, runner=Runner())


def test_cluster_must_have_one_single_threaded_worker_per_host():
    experiment.check_cluster({"tcp://a:1": {"nthreads": 1, "host": "a"},
                              "tcp://b:1": {"nthreads": 1, "host": "b"}})  # fmt: skip
    with pytest.raises(InputError, match="--nthreads 1"):
        experiment.check_cluster({"tcp://a:1": {"nthreads": 2, "host": "a"}})
    with pytest.raises(InputError, match="share host a"):
        experiment.check_cluster({"tcp://a:1": {"nthreads": 1, "host": "a"},
                                  "tcp://a:2": {"nthreads": 1, "host": "a"}})  # fmt: skip


# --- the whole command, with a stand-in vng -----------------------------------------------

FAKE_VNG = r"""#!{python}
# Stand-in for vng: sleeps like a guest, then leaves what the guest side would.
import json, os, sys, time, uuid
from pathlib import Path
argv = sys.argv[1:]
if argv == ["--version"]:
    print("virtme-ng 0.0-fake")
    sys.exit(0)
share = Path(argv[argv.index("--rwdir") + 1].split("=", 1)[1])
# Written aside and renamed: the test reads the pid as soon as the name appears.
(share / "vng-started.tmp").write_text(str(os.getpid()))
(share / "vng-started.tmp").rename(share / "vng-started")
time.sleep(float(os.environ.get("FAKE_VNG_SECONDS", "0")))
spec = json.loads((share / "spec.json").read_text())
run = spec["capture_argv"][spec["capture_argv"].index("--run") + 1]
knobs = dict(spec["sysctls"])
timeout = int(knobs.get("vm.reclaim_throttle_writeback_ms", "100")) * 1000
it = share / "out" / run / "iter-0"
it.mkdir(parents=True)
(it / "kernel.version").write_text("Linux version 6.12.117-fake\n")
trace = (
    "" if os.environ.get("FAKE_VNG_NO_RECLAIM") else
    "python-7 [001] ..... 100.000100: mm_vmscan_memcg_reclaim_begin: order=0 "
    "gfp_flags=GFP_HIGHUSER_MOVABLE\n"
) + (
    f"python-7 [001] ..... 100.000200: mm_vmscan_throttled: nid=0 usec_timeout={{timeout}} "
    "usect_delayed=8000 reason=VMSCAN_THROTTLE_WRITEBACK\n"
)
import zstandard
(it / "ftrace-stutterp.zst").write_bytes(zstandard.ZstdCompressor().compress(trace.encode()))
result = {{"boot_s": 1.5, "capture_s": 2.0, "capture_rc": 0, "boot_id": str(uuid.uuid4()),
          "cgroup": {{"version": spec["cgroup"]}},
          "sysctls_read_back": {{n: {{"requested": v, "read_back": v}}
                                for n, v in spec["sysctls"]}}}}
(share / "result.json").write_text(json.dumps(result))
"""


@pytest.fixture
def fake_lab(tmp_path):
    """A kernel image with its build record, a stand-in vng on PATH, a private capture lock,
    and the plan; returns (plan path, environment)."""
    image = tmp_path / "kernels" / "bzImage"
    image.parent.mkdir()
    image.write_bytes(b"not really a kernel")
    record = {"kernel_release": "6.12.117", "source_package": "linux-source-6.12 6.12.117-1",
              "patch_series_sha256": "ab" * 32, "compiler": "gcc 12", "config_hz": 250}  # fmt: skip
    (image.parent / "build.json").write_text(json.dumps(record))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    vng = bin_dir / "vng"
    vng.write_text(FAKE_VNG.format(python=sys.executable))
    vng.chmod(vng.stat().st_mode | stat.S_IXUSR)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "MMLAB_CAPTURE_LOCK": str(tmp_path / "capture.lock"),
        "MMLAB_TEST_CWD": str(tmp_path),
    }
    return plan_file(tmp_path), env


def _mmlab(args, env):
    # cwd: the ingest cache (build/ingest) of the knob check goes under the test's directory
    return subprocess.Popen([sys.executable, "-m", "analysis.cli", *args], env=env,
                            cwd=env["MMLAB_TEST_CWD"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def _digest(out: Path) -> dict[str, str]:
    """What a finished tree holds, minus what differs between two executions of one plan
    (boot ids, times, paths): setting/iter-K -> run id and the trace's digest."""
    found = {}
    for boot in out.glob("*/iter-*/boot.json"):
        trace = (boot.parent / "ftrace-stutterp.zst").read_bytes()
        found[str(boot.parent.relative_to(out))] = (
            json.loads(boot.read_text())["run_id"],
            hashlib.sha256(trace).hexdigest(),
        )
    return found


def _wait_for(path_glob, out: Path, timeout=300.0) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(out.glob(path_glob))
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"{path_glob} never appeared under {out}")


def _gone(pid: int) -> bool:
    """No such process, or only its zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL])
def test_a_signalled_plan_resumes_to_the_same_finished_tree(fake_lab, tmp_path, signum):
    plan, env = fake_lab
    reference = tmp_path / "reference"
    done = _mmlab(["experiment", "run", str(plan), str(reference)], env)
    assert done.wait(timeout=600) == 0, done.stderr.read()

    out = tmp_path / "out"
    slow = {**env, "FAKE_VNG_SECONDS": "30"}
    first = _mmlab(["experiment", "run", str(plan), str(out)], slow)
    started = _wait_for(".staging/*/out/.mmlab-vm-*/vng-started", out)
    vng_pid = int(started.read_text())
    first.send_signal(signum)
    code = first.wait(timeout=300)
    if signum == signal.SIGINT:
        assert code == 130 and "run it again to resume" in first.stderr.read()
        assert not Path(f"/proc/{vng_pid}").exists()  # the guest went with it
    else:
        assert code == -signal.SIGKILL
        assert Path(f"/proc/{vng_pid}").exists()  # vng has a session of its own: left running
    resumed = _mmlab(["experiment", "run", str(plan), str(out)], env)
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read()
    err = resumed.stderr.read()
    if signum == signal.SIGKILL:
        assert "stopped the guest a killed executor left running" in err
        # Signalled, it goes within moments; on a loaded machine more than 0.2 s.
        deadline = time.monotonic() + 30
        while not _gone(vng_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(vng_pid)
    assert _digest(out) == _digest(reference)
    assert not list((out / ".staging").glob("*"))
    status = _mmlab(["experiment", "status", str(out), "--json"], env)
    assert status.wait(timeout=60) == 0
    assert len(json.loads(status.stdout.read())["done"]) == 4


def test_a_guest_capture_that_did_not_reclaim_fails_and_is_left_out(fake_lab, tmp_path):
    """docs/patched-kernels.md's --kernel example on a busy host: the cgroup never reached
    its limit. The capture says so, exits 1, and analyses leave the iteration out with the
    reason."""
    from analysis.ingest import mmtests

    plan, env = fake_lab
    out = tmp_path / "cap"
    image = plan.parent / "kernels" / "bzImage"
    argv = ["capture", str(out), "--run", "x", "--limit-mb", "128", "--workers", "4",
            "--iterations", "1", "--accel", "tcg", "--kernel", str(image)]  # fmt: skip
    proc = _mmlab(argv, {**env, "FAKE_VNG_NO_RECLAIM": "1"})
    assert proc.wait(timeout=600) == 1
    err = proc.stderr.read()
    assert "iter-0 FAILED (left out of analyses): no reclaim in the trace" in err
    assert "no reclaim" in (out / "x" / "iter-0" / "mmlab-failed").read_text()
    with pytest.raises(InputError, match="every iteration"):
        mmtests.find_runs(out)
    ok = _mmlab([*argv[:1], str(tmp_path / "cap2"), *argv[2:]], env)
    assert ok.wait(timeout=600) == 0, ok.stderr.read()
    assert not (tmp_path / "cap2" / "x" / "iter-0" / "mmlab-failed").exists()


def test_a_dask_cluster_boots_the_runs_and_the_coordinator_installs_them(
    fake_lab, tmp_path, monkeypatch
):
    """One single-threaded worker (as on a test machine): every run comes back and is
    installed in the plan's order of positions, each with the worker's host recorded."""
    from distributed import Client, LocalCluster

    from analysis.capture import run as capture_run

    plan_path, env = fake_lab
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.chdir(tmp_path)
    real = capture_run.machine_lock
    monkeypatch.setattr(capture_run, "machine_lock", lambda: real(tmp_path / "capture.lock"))
    plan = design.load_plan(plan_path)
    out = tmp_path / "out"
    with (
        LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        status = experiment.execute(plan, out, client=client)
    assert len(status.done) == 4 and not status.failed
    assert status.hosts == {os.uname().nodename: 4}
    positions = [
        json.loads(p.read_text())["position"] for p in sorted(out.glob("*/iter-*/boot.json"))
    ]
    assert sorted(positions) == [0, 1, 2, 3]
    events = [json.loads(line) for line in (out / "journal.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events].count("done") == 4


def test_the_committed_sweep_plans_cover_what_the_question_needs():
    """kernels/plans/: WRITEBACK at >= 5 timeouts from one jiffy to 500 ms, NOPROGRESS at
    >= 3, the divisor at >= 3 with the shrinker workload, each under a cgroup limit and
    global pressure, >= 10 boots per setting; the defaults count as one value each."""
    plans = Path(__file__).parent.parent / "kernels" / "plans"
    throttle = design.load_plan(plans / "sweep-throttle-6.12.yaml")
    divisor = design.load_plan(plans / "sweep-divisor-6.12.yaml")
    design.load_plan(plans / "pilot-6.12.yaml")

    def values(plan, knob, default):
        found = {s.params.get("sysctl", {}).get(knob, default) for s in plan.settings}
        return {int(v) for v in found} if default.isdigit() else found

    wb = values(throttle, "vm.reclaim_throttle_writeback_ms", "100")
    assert len(wb) >= 5 and min(wb) == 4 and max(wb) == 500  # 4 ms: one jiffy at HZ=250
    assert len(values(throttle, "vm.reclaim_throttle_noprogress_ms", "4")) >= 3
    assert len(values(divisor, "vm.shrinker_deferred_divisor", "2^priority")) >= 3
    assert {s.params["workload"] for s in divisor.settings} == {"shrinker"}
    for plan in (throttle, divisor):
        assert {s.params["pressure"] for s in plan.settings} == {"cgroup", "global"}
        assert plan.boots_per_setting >= 10 and plan.sizing["power"] == 0.8
        assert plan.primary_endpoint == "reclaim_efficiency"  # the pilot's choice


def test_global_pressure_only_in_a_guest_and_within_its_memory(monkeypatch):
    """The host never runs --pressure global; a guest's budget leaves the kernel room."""
    from analysis.capture.checks import GLOBAL_RESERVE_BYTES, check_arguments
    from analysis.capture.plan import MIB
    from analysis.capture.run import CaptureConfig

    cfg = CaptureConfig(out=Path("/tmp/x"), run="g", workers=(8,), limit_mb=640, pressure="global")
    monkeypatch.delenv("MMLAB_IN_GUEST", raising=False)
    with pytest.raises(InputError, match="only inside a guest"):
        check_arguments(cfg, 20_000 * MIB, 20)
    assert check_arguments(cfg, 1024 * MIB, 20, for_guest=True)  # the host, for a 1 GiB guest
    auto = CaptureConfig(out=Path("/tmp/x"), run="g", workers=(8,), limit_mb=0, pressure="global")
    assert check_arguments(auto, 1024 * MIB, 20, for_guest=True) == []  # sized in the guest
    monkeypatch.setenv("MMLAB_IN_GUEST", "1")
    (plan,) = check_arguments(cfg, 640 * MIB, 20)
    # anon = budget - dirty share - margin - overhead: only file pages are to be reclaimed
    fixed = plan.anon_total_bytes + plan.probe_map_bytes + plan.overhead_bytes
    assert fixed <= 640 * MIB - 128 * MIB - 24 * MIB
    with pytest.raises(InputError, match="above MemAvailable"):
        check_arguments(cfg, 640 * MIB - 1, 20)
    # a small dirty share leaves the anon too close to MemAvailable: refused
    with pytest.raises(InputError, match="leaves less than 96 MiB"):
        check_arguments(cfg, 640 * MIB, 2)
    assert fixed < 640 * MIB - GLOBAL_RESERVE_BYTES


def test_a_run_waits_for_a_busy_machine_instead_of_failing(fake_lab, tmp_path, monkeypatch):
    """Another capture holding the host lock delays the run; once it ends the run goes on."""
    import threading

    from analysis.capture import run as capture_run

    plan_path, env = fake_lab
    monkeypatch.setenv("PATH", env["PATH"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(experiment, "BUSY_POLL_S", 0.05)
    lock = tmp_path / "capture.lock"
    real = capture_run.machine_lock
    monkeypatch.setattr(capture_run, "machine_lock", lambda: real(lock))
    plan = design.load_plan(plan_path)
    held = threading.Event()
    release = threading.Event()

    def other_capture():
        with real(lock):
            held.set()
            release.wait(30)

    t = threading.Thread(target=other_capture)
    t.start()
    held.wait(10)
    threading.Timer(1.0, release.set).start()
    status = experiment.execute(plan, tmp_path / "out")
    t.join()
    assert len(status.done) == 4 and not status.failed
