"""An experiment plan: settings, boots per setting, the randomised interleaved order (pure).

A plan file (YAML, ``kernels/plans/*.yaml``; docs/experiments.md) names the kernel image,
the factors and their levels, how many boots each setting gets, the seed, and the primary
endpoint, named before any run. Settings are the cross product of the factors' levels (less
``exclude``); each setting's parameters are the union of its levels' (two levels setting
the same parameter is an error, so a setting means one thing).

The order follows Kalibera & Jones ("Rigorous benchmarking in reasonable time", 2013): the
boot, not an iteration inside it, is the unit of replication, and settings are interleaved
in blocks, each block holding every setting once in an order reshuffled per block, so that
drift of the platform over the hours of a sweep falls on every setting alike and shows up
as a block effect instead of a knob effect.
"""

from __future__ import annotations

import hashlib
import itertools
import random
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from analysis.errors import InputError

__all__ = [
    "ENDPOINTS",
    "PARAMETERS",
    "Plan",
    "PlannedRun",
    "Setting",
    "block_order",
    "load_plan",
    "parse_plan",
    "planned_runs",
]

# What a run can be judged by (the analyses of issue 34 read these names): a plan's
# endpoints must be among them, so a typo is caught before hours of runs, not after.
ENDPOINTS = {
    "reclaim_velocity": "pages scanned per second of the workload (pgscan_*)",
    "reclaim_efficiency": "pages reclaimed / pages scanned (pgsteal_* / pgscan_*)",
    "throttle_stall": "time reclaimers slept in reclaim_throttle() (mm_vmscan_throttled)",
    "direct_reclaim_stall": "time in direct reclaim (mm_vmscan_direct_reclaim_begin->end)",
    "memcg_reclaim_stall": "time in memcg reclaim (mm_vmscan_memcg_reclaim_begin->end)",
    "probe_latency": "the anon-latency probe's fault latency (mmap-latency log)",
    "shrinker_scanned": "objects scanned by shrinkers (mm_shrink_slab_end)",
    "shrinker_freed": "objects freed by shrinkers (mm_shrink_slab_end)",
    "shrinker_backlog": "largest deferred count taken by one call (mm_shrink_slab_start)",
    "shrinker_latency": "mm_shrink_slab_start->end duration",
    "system_cpu": "the workload's system CPU seconds (tests-timestamp)",
    "elapsed": "the workload's wall-clock seconds",
}

# Parameters a factor level may set, with the type each must have. ``sysctl`` maps knob
# name -> value (set in the guest before the capture); the rest are capture and guest
# options (``mmlab capture --help``).
PARAMETERS: dict[str, type | tuple[type, ...]] = {
    "sysctl": dict,
    "pressure": str,  # cgroup | global
    "cgroup": int,  # 1 | 2: the guest's memory cgroup hierarchy
    "filesystem": str,  # ext4 | xfs
    "write_mb_s": (int, float),  # qemu drive throttling of the guest's disk
    "read_mb_s": (int, float),
    "workload": str,  # stutterp | shrinker
    "workers": int,
    "duration": (int, float),
    "warmup": (int, float),
    "limit_mb": int,
    "slab_files": int,
    "negative_dentries": int,
    "probe_seconds": (int, float),
    "guest_memory_mb": int,
    "guest_cpus": int,
    "guest_disk_mb": int,
}
_CHOICES = {
    "pressure": ("cgroup", "global"),
    "cgroup": (1, 2),
    "filesystem": ("ext4", "xfs"),
    "workload": ("stutterp", "shrinker"),
}
_TOP_KEYS = {
    "name", "kernel", "seed", "boots_per_setting", "primary_endpoint", "secondary_endpoints",
    "sizing", "defaults", "factors", "exclude", "accel", "timeout_s", "description",
}  # fmt: skip


@dataclass(frozen=True)
class Setting:
    """One cell of the design: its name (the levels joined by ``-``), the level of each
    factor, and the merged parameters."""

    name: str
    levels: tuple[tuple[str, str], ...]
    params: dict = field(hash=False, compare=False)


@dataclass(frozen=True)
class PlannedRun:
    """One boot of one setting: ``position`` in the whole order (0-based), its ``block``."""

    run_id: str
    position: int
    block: int
    setting: str


@dataclass(frozen=True)
class Plan:
    """A parsed plan file (see module docstring); ``digest`` is the SHA-256 of its bytes."""

    path: Path
    name: str
    kernel: Path
    seed: int
    boots_per_setting: int
    primary_endpoint: str
    secondary_endpoints: tuple[str, ...]
    settings: tuple[Setting, ...]
    sizing: dict
    accel: str
    timeout_s: float
    digest: str
    text: str = field(repr=False)

    def setting(self, name: str) -> Setting:
        return next(s for s in self.settings if s.name == name)


def _check_params(params: object, where: str, path: Path) -> dict:
    if not isinstance(params, dict):
        raise InputError(path, f"{where}: expected a mapping of parameters, got {params!r}")
    for key, value in params.items():
        if key not in PARAMETERS:
            known = ", ".join(sorted(PARAMETERS))
            raise InputError(path, f"{where}: unknown parameter {key!r} (known: {known})")
        kind = PARAMETERS[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise InputError(path, f"{where}: {key} must be {_kind_name(kind)}, got {value!r}")
        if key in _CHOICES and value not in _CHOICES[key]:
            raise InputError(path, f"{where}: {key} must be one of {_CHOICES[key]}, got {value!r}")
        if key == "sysctl":
            for name, v in value.items():
                if not isinstance(name, str) or not name.startswith(("vm.", "kernel.")):
                    raise InputError(path, f"{where}: sysctl name {name!r} is not vm.* or kernel.*")
                if not isinstance(v, str | int) or isinstance(v, bool):
                    raise InputError(path, f"{where}: sysctl {name} value {v!r} is not a scalar")
        elif isinstance(value, int | float) and value <= 0 and (key, value) != ("limit_mb", 0):
            raise InputError(path, f"{where}: {key} must be positive, got {value!r}")
    return params


def _kind_name(kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join({dict: "a mapping", str: "a string", int: "an integer",
                        float: "a number"}[k] for k in kinds)  # fmt: skip


def _merge(levels: list[tuple[str, str, dict]], path: Path) -> dict:
    """The parameters of one setting: each level's, a key set twice being an error (a
    sysctl is merged by name)."""
    merged: dict = {}
    owner: dict[str, str] = {}
    for factor, level, params in levels:
        for key, value in params.items():
            if key == "sysctl":
                for name, v in value.items():
                    if f"sysctl {name}" in owner:
                        raise InputError(path, f"{owner[f'sysctl {name}']} and {factor}={level} "
                                         f"both set sysctl {name}")  # fmt: skip
                    owner[f"sysctl {name}"] = f"{factor}={level}"
                    merged.setdefault("sysctl", {})[name] = str(v)
                continue
            if key in owner:
                raise InputError(path, f"{owner[key]} and {factor}={level} both set {key}")
            owner[key] = f"{factor}={level}"
            merged[key] = value
    return merged


def _endpoint(name: object, where: str, path: Path) -> str:
    if name not in ENDPOINTS:
        raise InputError(
            path, f"{where}: {name!r} is not an endpoint mmlab measures ({', '.join(ENDPOINTS)})"
        )
    return str(name)


def _settings(doc: dict, path: Path) -> tuple[Setting, ...]:
    factors = doc.get("factors")
    if not isinstance(factors, dict) or not factors:
        raise InputError(path, "factors: expected a mapping of factor -> {level: parameters}")
    axes = []
    for factor, levels in factors.items():
        if not isinstance(levels, dict) or not levels:
            raise InputError(path, f"factors.{factor}: expected a mapping of level -> parameters")
        for level in levels:
            if not isinstance(level, str) or not level or "-" in level or "/" in level:
                raise InputError(path, f"factors.{factor}: level name {level!r} must be a "
                                 "non-empty string without '-' or '/'")  # fmt: skip
        axes.append([(factor, level, _check_params(levels[level] or {},
                      f"factors.{factor}.{level}", path)) for level in levels])  # fmt: skip
    defaults = _check_params(doc.get("defaults") or {}, "defaults", path)
    exclude = doc.get("exclude") or []
    if not isinstance(exclude, list) or not all(isinstance(e, dict) for e in exclude):
        raise InputError(path, "exclude: expected a list of {factor: level} mappings")
    for rule in exclude:
        for factor, level in rule.items():
            if factor not in factors or level not in factors[factor]:
                raise InputError(path, f"exclude: no level {factor}={level}")
    settings = []
    for combo in itertools.product(*axes):
        levels = tuple((f, lv) for f, lv, _ in combo)
        if any(all(dict(levels)[f] == lv for f, lv in rule.items()) for rule in exclude):
            continue
        params = _merge([("defaults", "", defaults), *combo], path)
        if params.get("limit_mb") == 0 and params.get("pressure", "cgroup") != "global":
            name = "-".join(lv for _, lv in levels)
            raise InputError(path, f"{name}: limit_mb 0 (the guest's MemAvailable) is for "
                             "pressure: global only")  # fmt: skip
        settings.append(Setting("-".join(lv for _, lv in levels), levels, params))
    if not settings:
        raise InputError(path, "exclude leaves no setting")
    return tuple(settings)


def parse_plan(text: str, path: Path) -> Plan:
    """A :class:`Plan` from the YAML ``text`` of ``path`` (relative kernel paths are taken
    from the plan file's directory); InputError names the key that is wrong."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(path, f"not YAML: {exc}", line=mark.line + 1 if mark else None) from None
    if not isinstance(doc, dict):
        raise InputError(path, "not a plan: expected a YAML mapping")
    if unknown := sorted(set(doc) - _TOP_KEYS):
        raise InputError(
            path, f"unknown key {unknown[0]!r} (known: {', '.join(sorted(_TOP_KEYS))})"
        )
    for key in ("name", "kernel", "seed", "boots_per_setting", "primary_endpoint", "factors"):
        if key not in doc:
            raise InputError(path, f"missing {key!r}" + (
                ": the primary endpoint is named before any run" if key == "primary_endpoint"
                else ""))  # fmt: skip
    boots, seed = doc["boots_per_setting"], doc["seed"]
    if not isinstance(boots, int) or isinstance(boots, bool) or boots < 1:
        raise InputError(path, f"boots_per_setting must be a positive integer, got {boots!r}")
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InputError(path, f"seed must be an integer, got {seed!r}")
    name = str(doc["name"])
    if not name or "/" in name:
        raise InputError(path, f"name must be a plain name, got {name!r}")
    secondary = doc.get("secondary_endpoints") or []
    if not isinstance(secondary, list):
        raise InputError(path, "secondary_endpoints: expected a list")
    primary = _endpoint(doc["primary_endpoint"], "primary_endpoint", path)
    secondary = tuple(_endpoint(e, "secondary_endpoints", path) for e in secondary)
    if primary in secondary:
        raise InputError(path, f"{primary} is both the primary and a secondary endpoint")
    kernel = Path(str(doc["kernel"]))
    if not kernel.is_absolute():
        kernel = (path.parent / kernel).resolve()
    sizing = doc.get("sizing") or {}
    if not isinstance(sizing, dict):
        raise InputError(path, "sizing: expected a mapping (effect, power, alpha, basis)")
    accel = str(doc.get("accel", "auto"))
    if accel not in ("auto", "kvm", "tcg"):
        raise InputError(path, f"accel must be auto, kvm or tcg, got {accel!r}")
    timeout = doc.get("timeout_s", 1800)
    if not isinstance(timeout, int | float) or timeout <= 0:
        raise InputError(path, f"timeout_s must be a positive number, got {timeout!r}")
    return Plan(
        path=path, name=name, kernel=kernel, seed=seed, boots_per_setting=boots,
        primary_endpoint=primary, secondary_endpoints=secondary, settings=_settings(doc, path),
        sizing=sizing, accel=accel, timeout_s=float(timeout),
        digest=hashlib.sha256(text.encode()).hexdigest(), text=text,
    )  # fmt: skip


def load_plan(path: Path) -> Plan:
    """:func:`parse_plan` of the file at ``path``."""
    try:
        text = path.read_text()
    except UnicodeDecodeError:
        raise InputError(path, "not a text plan file (not UTF-8)") from None
    return parse_plan(text, path)


def block_order(n: int, seed: int, block: int) -> list[int]:
    """A permutation of ``range(n)`` for ``block``: Fisher-Yates driven by
    ``random.Random.random()``, the one stream Python keeps the same across versions for
    the same seed, so a plan's order can be recomputed from its seed anywhere."""
    rng = random.Random(f"mmlab-plan {seed} block {block}")
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        order[i], order[j] = order[j], order[i]
    return order


def planned_runs(plan: Plan) -> list[PlannedRun]:
    """Every run of ``plan`` in execution order: block after block, each holding every
    setting once in its own shuffled order."""
    runs = []
    for block in range(plan.boots_per_setting):
        for i in block_order(len(plan.settings), plan.seed, block):
            position = len(runs)
            setting = plan.settings[i].name
            runs.append(PlannedRun(f"{position:04d}-{setting}", position, block, setting))
    return runs
