"""Capture metadata, typed: the one reader of ``mmlab.json``, ``vm.json`` and ``boot.json``.

- ``mmlab.json`` (:data:`MMLAB_JSON`), one per ``iter-N`` of ``mmlab capture``
  (:mod:`analysis.capture.run`): the machine, the capture's options, the sysctls and
  memory cgroup it ran under, the trace and the workload's phases (:class:`IterationMeta`);
- ``vm.json`` (:data:`VM_JSON`), beside the ``iter-N`` of a guest capture
  (:mod:`analysis.capture.vm`, one boot) or of a setting of ``mmlab experiment``
  (:mod:`analysis.capture.experiment`, one boot per iteration): the kernel build, the
  guest, the accelerator and the knobs read back and checked (:class:`VmRecord`);
- ``boot.json`` (:data:`BOOT_JSON`), in each ``iter-N`` of ``mmlab experiment``: the
  planned run and its boot (:class:`BootRecord`).

The writers keep writing dicts; what anything reads of them is read here, once, into
frozen dataclasses. A key that is absent is None (older captures lack some), never a
guessed default. A file that is not JSON, not an object, not written by the tool it belongs
to, or that holds a key of another type, is an :class:`~analysis.errors.InputError` naming
the file and the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from analysis.errors import InputError
from analysis.ingest.textfile import read_text

__all__ = [
    "BOOT_JSON",
    "CAPTURE_TOOL",
    "EXPERIMENT_TOOL",
    "GUEST_TOOL",
    "KERNEL_IDENTITY",
    "MMLAB_JSON",
    "ORDER_JSON",
    "VM_JSON",
    "BootRecord",
    "ExperimentOrder",
    "ExperimentSetting",
    "Guest",
    "IterationMeta",
    "KernelBuild",
    "Phase",
    "ProbeOverhead",
    "System",
    "TraceRecord",
    "VmRecord",
    "iteration_meta",
    "read_boot",
    "read_iteration",
    "read_order",
    "read_vm",
    "the_vm_below",
    "vm_record",
]

MMLAB_JSON = "mmlab.json"
VM_JSON = "vm.json"
BOOT_JSON = "boot.json"
ORDER_JSON = "order.json"
# The ``tool`` each file names: a JSON object without it is not mmlab's.
CAPTURE_TOOL = "mmlab capture"
GUEST_TOOL = "mmlab capture --kernel"
EXPERIMENT_TOOL = "mmlab experiment run"

# mmlab.json keys that say where a capture went or what it measured, not what it ran under;
# config.sets is left out because the sysctls it set are compared as they were in effect.
_NOT_SETTINGS = frozenset(
    {
        "config.out",
        "config.run",
        "config.command_line",
        "config.sets",
        "config.iterations",
        "system.hostname",
        "system.cpu.model",
        "system.cpu.logical_cpus",
        "system.memory.mem_total_kib",
        "system.memory.mem_available_kib",
        "system.config_hz",
        "system.kconfig_available",
    }
)
# The trace setup a comparison of captures must show (not its size or accounting).
_TRACE_SETTINGS = ("clock", "events_enabled", "buffer_size_kb_per_cpu")


def _read_object(path: Path, what: str) -> dict:
    """``path`` as a JSON object; an error names the file, the line and what was expected."""
    try:
        found = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not JSON: {exc.msg}", line=exc.lineno) from None
    if not isinstance(found, dict):
        raise InputError(path, f"not {what}")
    return found


def _check_tool(document: Mapping, path: Path, tools: tuple[str, ...]) -> str:
    """The ``tool`` ``document`` names, one of ``tools``; an error otherwise."""
    tool = document.get("tool")
    if tool not in tools:
        found = f"'tool' is {tool!r}" if "tool" in document else "no 'tool'"
        raise InputError(path, f"{found}: not the {path.name} of {' or '.join(tools)}")
    return str(tool)


class _Fields:
    """Typed reads of one JSON object (``where``: its key path in ``source``): a key absent
    or null is None, one of another type an InputError naming the file and the key."""

    def __init__(self, doc: Mapping, source: Path, where: str = "") -> None:
        self.doc, self.source, self.where = doc, source, where

    def _get(self, key: str, kinds: tuple[type, ...], expected: str) -> object:
        value = self.doc.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, kinds):
            shown = json.dumps(value)
            shown = shown if len(shown) <= 40 else f"{shown[:37]}..."
            raise InputError(self.source, f"'{self.where}{key}' is {shown}, not {expected}")
        return value

    def text(self, key: str) -> str | None:
        return self._get(key, (str,), "text")  # type: ignore[return-value]

    def integer(self, key: str) -> int | None:
        return self._get(key, (int,), "an integer")  # type: ignore[return-value]

    def number(self, key: str) -> float | None:
        value = self._get(key, (int, float), "a number")
        return None if value is None else float(value)  # type: ignore[arg-type]

    def mapping(self, key: str) -> Mapping:
        """The object at ``key`` ({} when absent)."""
        return self._get(key, (dict,), "an object") or {}  # type: ignore[return-value]

    def sub(self, key: str) -> _Fields:
        return _Fields(self.mapping(key), self.source, f"{self.where}{key}.")

    def items(self, key: str) -> list:
        """The list at ``key`` ([] when absent)."""
        return self._get(key, (list,), "a list") or []  # type: ignore[return-value]

    def objects(self, key: str) -> Iterator[_Fields]:
        """Each object of the list at ``key``."""
        for i, item in enumerate(self.items(key)):
            if not isinstance(item, dict):
                raise InputError(self.source, f"'{self.where}{key}[{i}]' is not an object")
            yield _Fields(item, self.source, f"{self.where}{key}[{i}].")

    def entries(self, key: str, field: str) -> dict[str, str]:
        """``name → str(value[field])`` of the object of objects at ``key``."""
        out = {}
        for name, value in self.mapping(key).items():
            if not isinstance(value, dict) or field not in value:
                raise InputError(self.source, f"'{self.where}{key}.{name}' has no {field!r}")
            out[name] = str(value[field])
        return out


@dataclass(frozen=True)
class System:
    """``system`` of mmlab.json: the capturing machine (its kernel, CONFIG_HZ, boot id)."""

    kernel_release: str | None
    hostname: str | None
    cpu_model: str | None
    logical_cpus: int | None
    mem_total_kib: int | None
    config_hz: int | None
    boot_id: str | None


@dataclass(frozen=True)
class Phase:
    """One entry of mmlab.json's ``phases``: a phase of the built-in workload run with
    ``workers`` (its epoch and trace-clock bounds and ``plan``), or the user's command
    (``command`` set: how it ``ended``, its wall and CPU seconds)."""

    workers: int | None
    start_epoch_s: float | None
    end_epoch_s: float | None
    start_trace_s: float | None
    end_trace_s: float | None
    plan: Mapping[str, object]
    command: tuple[str, ...] | None
    ended: str | None
    elapsed_s: float | None
    user_s: float | None
    system_s: float | None


@dataclass(frozen=True)
class TraceRecord:
    """``trace`` of mmlab.json: the trace file, its size raw and compressed, and the events
    the kernel lost."""

    file: str | None
    bytes_uncompressed: int | None
    bytes_compressed: int | None
    lost_events: int | None
    lost_event_lines: int | None
    # ``group/event`` of every event the capture enabled: an event absent from the trace
    # but enabled here did not happen (an absent one not enabled says nothing).
    events_enabled: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeOverhead:
    """``probe.idle_overhead`` of mmlab.json: the latency probe on an idle cgroup."""

    map_bytes: int
    mappings: int
    idle_latency_median_us: float
    idle_latency_p99_us: float
    loop_overhead_median_us: float


@dataclass(frozen=True)
class IterationMeta:
    """One iteration's ``mmlab.json`` (``path``). ``workers``, ``duration_s``, ``limit_mb``
    and ``slab_files`` are the capture's options (``config``); ``sysctls_before`` the vm
    sysctls before it, ``sysctls_set`` those it set (name → value); ``document`` the whole
    object, as written (``mmlab capture --json`` prints it)."""

    path: Path
    iteration: int | None
    start_epoch_s: float | None
    end_epoch_s: float | None
    system: System | None
    workers: tuple[int, ...]
    duration_s: float | None
    limit_mb: int | None
    slab_files: int | None
    dirty_ratio_used: int | None
    cgroup_version: int | None
    sysctls_before: Mapping[str, str]
    sysctls_set: Mapping[str, str]
    trace: TraceRecord | None
    phases: tuple[Phase, ...]
    oom_kills: int | None
    probe_overhead: ProbeOverhead | None
    stale_leftovers: tuple[str, ...]
    document: Mapping[str, object]

    def settings(self) -> dict[str, str]:
        """What the iteration ran under besides its sysctls, as ``name → value``: the
        capture's options (``config.*``), kernel build, THP and swap (``system.*``), the
        memory cgroup's files (``cgroup.*``), the trace setup (``trace.*``) and each phase's
        workload sizing (``plan[workers].*``); not where it went or what it measured."""
        doc = self.document
        out = _flat("config", doc.get("config", {})) | _flat("system", doc.get("system", {}))
        out |= {f"cgroup.{k}": str(v) for k, v in dict(doc.get("cgroup") or {}).items()}
        trace = dict(doc.get("trace") or {})
        for key in _TRACE_SETTINGS:
            if key in trace:
                out |= _flat(f"trace.{key}", trace[key])
        for phase in self.phases:
            out |= _flat(f"plan[{'' if phase.workers is None else phase.workers}]", phase.plan)
        return {k: v for k, v in out.items() if k not in _NOT_SETTINGS}


def _flat(prefix: str, value: object) -> dict[str, str]:
    if isinstance(value, dict):
        return {
            k: v for key, sub in value.items() for k, v in _flat(f"{prefix}.{key}", sub).items()
        }
    if isinstance(value, list):
        return {prefix: " ".join(str(v) for v in value)}
    return {prefix: str(value)}


def _system(f: _Fields) -> System | None:
    if not f.doc:
        return None
    cpu, memory = f.sub("cpu"), f.sub("memory")
    return System(
        kernel_release=f.text("kernel_release"),
        hostname=f.text("hostname"),
        cpu_model=cpu.text("model"),
        logical_cpus=cpu.integer("logical_cpus"),
        mem_total_kib=memory.integer("mem_total_kib"),
        config_hz=f.integer("config_hz"),
        boot_id=f.text("boot_id"),
    )


def _phase(f: _Fields) -> Phase:
    return Phase(
        workers=f.integer("workers"),
        start_epoch_s=f.number("start_epoch_s"),
        end_epoch_s=f.number("end_epoch_s"),
        start_trace_s=f.number("start_trace_s"),
        end_trace_s=f.number("end_trace_s"),
        plan=f.mapping("plan"),
        command=tuple(map(str, f.items("command"))) if "command" in f.doc else None,
        ended=f.text("ended"),
        elapsed_s=f.number("elapsed_s"),
        user_s=f.number("user_s"),
        system_s=f.number("system_s"),
    )


def _trace(f: _Fields) -> TraceRecord | None:
    if not f.doc:
        return None
    return TraceRecord(
        file=f.text("file"),
        bytes_uncompressed=f.integer("bytes_uncompressed"),
        bytes_compressed=f.integer("bytes_compressed"),
        lost_events=f.integer("lost_events"),
        lost_event_lines=f.integer("lost_event_lines"),
        events_enabled=tuple(map(str, f.items("events_enabled"))),
    )


def _probe_overhead(f: _Fields) -> ProbeOverhead | None:
    if not f.doc:
        return None
    values = {
        "map_bytes": f.integer("map_bytes"),
        "mappings": f.integer("mappings"),
        "idle_latency_median_us": f.number("idle_latency_median_us"),
        "idle_latency_p99_us": f.number("idle_latency_p99_us"),
        "loop_overhead_median_us": f.number("loop_overhead_median_us"),
    }
    if missing := [k for k, v in values.items() if v is None]:
        raise InputError(f.source, f"'{f.where.rstrip('.')}' lacks {', '.join(missing)}")
    return ProbeOverhead(**values)  # type: ignore[arg-type]


def iteration_meta(document: Mapping, path: Path) -> IterationMeta:
    """:class:`IterationMeta` of an ``mmlab.json`` object, read from ``path`` or just
    written there by the capture."""
    _check_tool(document, path, (CAPTURE_TOOL,))
    f = _Fields(document, path)
    config = f.sub("config")
    workers = config.items("workers")
    if not all(isinstance(w, int) and not isinstance(w, bool) for w in workers):
        raise InputError(path, f"'config.workers' is {workers!r}, not a list of integers")
    return IterationMeta(
        path=path,
        iteration=f.integer("iteration"),
        start_epoch_s=f.number("start_epoch_s"),
        end_epoch_s=f.number("end_epoch_s"),
        system=_system(f.sub("system")),
        workers=tuple(workers),
        duration_s=config.number("duration_s"),
        limit_mb=config.integer("limit_mb"),
        slab_files=config.integer("slab_files"),
        dirty_ratio_used=f.integer("dirty_ratio_used"),
        cgroup_version=f.sub("cgroup").integer("version"),
        sysctls_before={k: str(v) for k, v in f.mapping("sysctls_vm_before").items()},
        sysctls_set=f.entries("sysctl_changes", "to"),
        trace=_trace(f.sub("trace")),
        phases=tuple(_phase(p) for p in f.objects("phases")),
        oom_kills=f.integer("oom_kills"),
        probe_overhead=_probe_overhead(f.sub("probe").sub("idle_overhead")),
        stale_leftovers=tuple(map(str, f.items("stale_leftovers"))),
        document=document,
    )


def read_iteration(directory: Path) -> IterationMeta | None:
    """The ``mmlab.json`` of the iteration ``directory``, None when it has none (a plain
    mmtests tree, or a capture killed before writing it)."""
    path = directory / MMLAB_JSON
    if not path.exists():
        return None
    return iteration_meta(_read_object(path, "a JSON object of capture metadata"), path)


@dataclass(frozen=True)
class KernelBuild:
    """``kernel_build`` of vm.json: the patched kernel's ``build.json`` (``make kernels``)."""

    kernel_release: str | None
    source_package: str | None
    config_hz: int | None
    patch_series_sha256: str | None = None
    config_sha256: str | None = None
    bzimage_sha256: str | None = None

    def identity(self) -> tuple[str | None, ...]:
        """What makes two boots the same kernel (:data:`KERNEL_IDENTITY`): what the image
        was built from (a Debian point release moves the source package) and its bytes."""
        return tuple(getattr(self, k) for k in KERNEL_IDENTITY)


# The build.json keys that identify a kernel: source, patches, config, image.
KERNEL_IDENTITY = ("source_package", "patch_series_sha256", "config_sha256", "bzimage_sha256")


def kernel_build(build: _Fields) -> KernelBuild:
    """:class:`KernelBuild` of a ``kernel_build`` object (vm.json, boot.json's ``vm``)."""
    return KernelBuild(
        build.text("kernel_release"), build.text("source_package"), build.integer("config_hz"),
        build.text("patch_series_sha256"), build.text("config_sha256"),
        build.text("bzimage_sha256"),
    )  # fmt: skip


@dataclass(frozen=True)
class Guest:
    """``guest`` of vm.json: the virtual machine the capture ran in."""

    cpus: int | None
    memory_mb: int | None


@dataclass(frozen=True)
class VmRecord:
    """A run's ``vm.json`` (``path``), written by ``tool``: the ``accelerator``
    (``kvm``/``tcg``), kernel build, guest, the guest's boot id (an experiment's setting:
    its first boot's), the knobs as requested and read back (``sysctls_read_back``, sysctl →
    its record; :meth:`knobs` their values) and each iteration's knob check
    (``knob_check_note`` instead when none was made); ``document`` the whole object."""

    path: Path
    tool: str
    accelerator: str | None
    kernel_build: KernelBuild
    guest: Guest
    guest_boot_id: str | None
    sysctls_read_back: Mapping[str, Mapping[str, object]]
    knob_checks: tuple[Mapping[str, object], ...]
    knob_check_note: str | None
    document: Mapping[str, object]
    # Seconds from the guest's start to its capture's (``timings_s.guest_boot``).
    guest_boot_s: float | None = None

    def knobs(self) -> dict[str, str]:
        """sysctl → the value the guest read back before the capture."""
        return {name: str(knob["read_back"]) for name, knob in self.sysctls_read_back.items()}

    def deferral_divisors(self) -> tuple[str, ...]:
        """The shrinker deferral divisor each iteration was checked to run (its knob
        check's ``deferral.divisor``); an error when a check does not say."""
        out = []
        for i, check in enumerate(self.knob_checks):
            deferral = check.get("deferral")
            divisor = deferral.get("divisor") if isinstance(deferral, dict) else None
            if not isinstance(divisor, str):
                raise InputError(self.path, f"'knob_check[{i}]' names no deferral divisor")
            out.append(divisor)
        return tuple(out)


def vm_record(document: Mapping, path: Path) -> VmRecord:
    """:class:`VmRecord` of a ``vm.json`` object, read from ``path`` or just written there."""
    tool = _check_tool(document, path, (GUEST_TOOL, EXPERIMENT_TOOL))
    f = _Fields(document, path)
    build, guest = f.sub("kernel_build"), f.sub("guest")
    f.entries("sysctls_read_back", "read_back")  # each knob says what it read back
    note = f.text("knob_check") if isinstance(document.get("knob_check"), str) else None
    return VmRecord(
        path=path,
        tool=tool,
        accelerator=f.text("accelerator"),
        kernel_build=kernel_build(build),
        guest=Guest(guest.integer("cpus"), guest.integer("memory_mb")),
        guest_boot_id=f.text("guest_boot_id"),
        sysctls_read_back=f.mapping("sysctls_read_back"),
        knob_checks=() if note is not None else tuple(c.doc for c in f.objects("knob_check")),
        knob_check_note=note,
        document=document,
        guest_boot_s=f.sub("timings_s").number("guest_boot"),
    )


def read_vm(directory: Path) -> VmRecord | None:
    """The ``vm.json`` of a run ``directory`` (beside its ``iter-N``), None when it has
    none (not a guest capture)."""
    path = directory / VM_JSON
    if not path.exists():
        return None
    return vm_record(_read_object(path, "a JSON object of guest provenance"), path)


def the_vm_below(capture: Path) -> VmRecord:
    """The one ``vm.json`` below ``capture`` (a guest capture's folder); an error when there
    is none or several."""
    found = sorted(Path(capture).rglob(VM_JSON))
    if len(found) != 1:
        raise InputError(capture, f"expected one {VM_JSON} below it, found {len(found)}")
    return vm_record(_read_object(found[0], "a JSON object of guest provenance"), found[0])


@dataclass(frozen=True)
class BootRecord:
    """An ``iter-N/boot.json`` of ``mmlab experiment`` (``path``): the planned run
    (``run_id``, its ``setting``), the wall time of its boot, the guest's boot id and host
    from the boot's own vm.json (``vm``), and the whole object (``document``, from which the
    setting's ``vm.json`` is rebuilt)."""

    path: Path
    run_id: str
    setting: str | None
    wall_s: float | None
    guest_boot_id: str | None
    host: str | None
    document: Mapping[str, object]
    # The plan's block the run belongs to, and the kernel it booted.
    block: int | None = None
    kernel_build: KernelBuild = KernelBuild(None, None, None)


def read_boot(directory: Path) -> BootRecord | None:
    """The ``boot.json`` of the iteration ``directory``, None when it has none (not a run
    of ``mmlab experiment``)."""
    path = directory / BOOT_JSON
    if not path.is_file():
        return None
    document = _read_object(path, "a JSON object of an experiment's boot")
    f = _Fields(document, path)
    run_id = f.text("run_id")
    if run_id is None:
        raise InputError(path, "no 'run_id': not the boot.json of mmlab experiment")
    vm = f.sub("vm")
    return BootRecord(
        path=path,
        run_id=run_id,
        setting=f.text("setting"),
        wall_s=f.number("wall_s"),
        guest_boot_id=vm.text("guest_boot_id"),
        host=vm.sub("host").text("hostname"),
        document=document,
        block=f.integer("block"),
        kernel_build=kernel_build(vm.sub("kernel_build")),
    )


@dataclass(frozen=True)
class ExperimentSetting:
    """One setting of an experiment's ``order.json``: its factor ``levels`` (factor →
    level) and the capture ``params`` its runs ran with."""

    name: str
    levels: Mapping[str, str]
    params: Mapping[str, object]


@dataclass(frozen=True)
class ExperimentOrder:
    """``order.json`` of ``mmlab experiment run`` (``path``): the plan, its endpoints named
    before any run, its settings in the plan's order, and how many runs it planned."""

    path: Path
    plan: str
    primary_endpoint: str
    secondary_endpoints: tuple[str, ...]
    settings: tuple[ExperimentSetting, ...]
    runs_planned: int


def read_order(out: Path) -> ExperimentOrder:
    """The ``order.json`` of an executed plan's ``out``; an error naming what is missing."""
    path = out / ORDER_JSON
    if not path.is_file():
        raise InputError(out, f"no {ORDER_JSON}: not the output of mmlab experiment run")
    f = _Fields(_read_object(path, "a JSON object of an experiment's order"), path)
    plan, primary = f.text("plan"), f.text("primary_endpoint")
    if plan is None or primary is None:
        raise InputError(path, "names no plan or primary endpoint")
    settings = tuple(
        ExperimentSetting(s.text("name") or "", s.mapping("levels"), s.mapping("params"))
        for s in f.objects("settings")
    )
    return ExperimentOrder(path, plan, primary, tuple(map(str, f.items("secondary_endpoints"))),
                           settings, len(f.items("runs")))  # fmt: skip
