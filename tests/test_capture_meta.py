"""The typed readers of capture metadata (analysis/ingest/capture_meta.py): every bundled
mmlab.json, vm.json and boot.json reads with what the analyses use, the values are the
files' own (read here with json and plain dict access), and a file that is not JSON, not
mmlab's, or holds a key of another type is refused naming the file and the key."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis.errors import InputError
from analysis.ingest import capture_meta as cm
from tests.conftest import DATA

pytestmark = pytest.mark.skipif(not DATA.is_dir(), reason="the bundled captures are not here")

PILOT = DATA / "vm-6.12-lab" / "pilot" / "global-shrinker"


def _all(name: str) -> list[Path]:
    return sorted(DATA.rglob(name))


def test_every_bundled_iteration_reads_with_its_own_values():
    paths = _all(cm.MMLAB_JSON)
    assert len(paths) > 70
    for path in paths:
        raw = json.loads(path.read_text())
        meta = cm.read_iteration(path.parent)
        assert meta is not None and meta.path == path and meta.document == raw
        assert (meta.start_epoch_s, meta.end_epoch_s) == (raw["start_epoch_s"], raw["end_epoch_s"])
        assert meta.system.boot_id == raw["system"].get("boot_id")
        assert meta.system.logical_cpus == raw["system"]["cpu"]["logical_cpus"]
        assert meta.workers == tuple(raw["config"]["workers"])
        assert meta.limit_mb == raw["config"]["limit_mb"]
        assert meta.cgroup_version == raw["cgroup"]["version"]
        assert meta.sysctls_set == {k: v["to"] for k, v in raw["sysctl_changes"].items()}
        assert [p.workers for p in meta.phases] == [p.get("workers") for p in raw["phases"]]
        assert [p.start_trace_s for p in meta.phases] == [p["start_trace_s"] for p in raw["phases"]]
        assert meta.trace.bytes_compressed == raw["trace"]["bytes_compressed"]
        overhead = raw["probe"]["idle_overhead"]
        assert meta.probe_overhead.mappings == overhead["mappings"]


def test_every_bundled_vm_json_and_boot_json_reads_with_its_own_values():
    for path in _all(cm.VM_JSON):
        raw = json.loads(path.read_text())
        vm = cm.read_vm(path.parent)
        assert vm.tool == raw["tool"] and vm.accelerator == raw["accelerator"] == "tcg"
        assert vm.kernel_build.config_hz == raw["kernel_build"]["config_hz"] == 250
        assert vm.guest.cpus == raw["guest"]["cpus"]
        assert vm.knobs() == {k: str(v["read_back"]) for k, v in raw["sysctls_read_back"].items()}
        assert vm.deferral_divisors() == tuple(c["deferral"]["divisor"] for c in raw["knob_check"])
        assert cm.the_vm_below(path.parent) == vm
    boots = _all(cm.BOOT_JSON)
    assert len(boots) > 20
    for path in boots:
        raw = json.loads(path.read_text())
        boot = cm.read_boot(path.parent)
        assert (boot.run_id, boot.setting) == (raw["run_id"], raw["setting"])
        assert boot.guest_boot_id == raw["vm"]["guest_boot_id"]
        assert boot.host == raw["vm"]["host"]["hostname"]


def test_absent_files_are_none_and_a_capture_has_one_vm_json(tmp_path):
    assert cm.read_iteration(tmp_path) is None
    assert cm.read_vm(tmp_path) is None
    assert cm.read_boot(tmp_path) is None
    with pytest.raises(InputError, match=r"expected one vm\.json below it, found 0"):
        cm.the_vm_below(tmp_path)
    with pytest.raises(InputError, match="found 2"):  # the demo's two settings
        cm.the_vm_below(DATA / "vm-6.12-lab" / "demo")


def _copy(tmp_path: Path, name: str, edit) -> Path:
    """A copy of the pilot's iter-0 (and its vm.json) with ``name``'s JSON object edited."""
    run = tmp_path / "run"
    shutil.copytree(PILOT / "iter-0", run / "iter-0")
    shutil.copy(PILOT / cm.VM_JSON, run / cm.VM_JSON)
    path = (run if name == cm.VM_JSON else run / "iter-0") / name
    path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    return path


@pytest.mark.parametrize(
    ("name", "edit", "reason"),
    [
        (cm.MMLAB_JSON, lambda d: {"x": 1}, "no 'tool': not the mmlab.json of mmlab capture"),
        (cm.MMLAB_JSON, lambda d: d | {"tool": "perf"}, "'tool' is 'perf'"),
        (cm.MMLAB_JSON, lambda d: d | {"start_epoch_s": "soon"}, "'start_epoch_s' is \"soon\""),
        (cm.MMLAB_JSON, lambda d: d | {"oom_kills": True}, "'oom_kills' is true, not an integer"),
        (
            cm.MMLAB_JSON,
            lambda d: d | {"system": d["system"] | {"cpu": {"logical_cpus": 2.5}}},
            "'system.cpu.logical_cpus' is 2.5, not an integer",
        ),
        (cm.MMLAB_JSON, lambda d: d | {"phases": [1]}, "'phases[0]' is not an object"),
        (
            cm.MMLAB_JSON,
            lambda d: d | {"sysctl_changes": {"vm.swappiness": {"from": "60"}}},
            "'sysctl_changes.vm.swappiness' has no 'to'",
        ),
        (
            cm.MMLAB_JSON,
            lambda d: d | {"probe": {"idle_overhead": {"mappings": 3}}},
            "'probe.idle_overhead' lacks map_bytes",
        ),
        (cm.VM_JSON, lambda d: {"knob_check": []}, "no 'tool': not the vm.json of mmlab capture"),
        (cm.VM_JSON, lambda d: d | {"guest": []}, "'guest' is [], not an object"),
        (
            cm.VM_JSON,
            lambda d: d | {"sysctls_read_back": {"vm.x": {"requested": "1"}}},
            "'sysctls_read_back.vm.x' has no 'read_back'",
        ),
        (cm.BOOT_JSON, lambda d: {"vm": {}}, "no 'run_id': not the boot.json of mmlab experiment"),
    ],
)
def test_a_file_that_is_not_mmlabs_is_refused_naming_it(tmp_path, name, edit, reason):
    if name == cm.BOOT_JSON:
        path = tmp_path / "iter-0" / name
        path.parent.mkdir()
        path.write_text(json.dumps(edit({})))
    else:
        path = _copy(tmp_path, name, edit)
    read = {cm.MMLAB_JSON: cm.read_iteration, cm.VM_JSON: cm.read_vm, cm.BOOT_JSON: cm.read_boot}
    with pytest.raises(InputError) as err:
        read[name](path.parent)
    assert str(err.value).startswith(f"{path}: ") and reason in str(err.value)


def test_not_json_and_not_an_object_name_the_line(tmp_path):
    (tmp_path / cm.MMLAB_JSON).write_text('{"tool":\n')
    with pytest.raises(InputError, match=r"mmlab.json:2: not JSON"):
        cm.read_iteration(tmp_path)
    (tmp_path / cm.VM_JSON).write_text("[1]\n")
    with pytest.raises(InputError, match="not a JSON object of guest provenance"):
        cm.read_vm(tmp_path)


def test_a_knob_check_without_a_divisor_is_an_error_not_a_guess(tmp_path):
    path = _copy(tmp_path, cm.VM_JSON, lambda d: d | {"knob_check": [{"iteration": "iter-0"}]})
    vm = cm.read_vm(path.parent)
    with pytest.raises(InputError, match=r"'knob_check\[0\]' names no deferral divisor"):
        vm.deferral_divisors()
    note = _copy(tmp_path / "b", cm.VM_JSON, lambda d: d | {"knob_check": "not checked: no HZ"})
    vm = cm.read_vm(note.parent)
    assert (vm.knob_checks, vm.knob_check_note) == ((), "not checked: no HZ")


def test_settings_flatten_what_the_capture_ran_under():
    meta = cm.read_iteration(PILOT / "iter-0")
    settings = meta.settings()
    raw = meta.document
    assert settings["config.limit_mb"] == str(raw["config"]["limit_mb"])
    assert settings["system.thp.enabled"] == raw["system"]["thp"]["enabled"]
    assert settings["trace.clock"] == raw["trace"]["clock"]
    assert settings["plan[8].workers"] == "8"
    # Where it went and what it measured are not settings.
    assert not {"config.out", "config.run", "system.hostname", "trace.lost_events"} & set(settings)
