"""Benchmarks mmlab has no native reader for, read through the user's mmtests checkout.

Current mmtests (``bin/lib/MMTests/ExtractShellpack.pm``) reads every converted benchmark
by running ``shellpack_src/src/<bench>/parse-results <logs dir>``, which prints one
tab-separated line per sample, ``metric factorA factorB sample value extra``, and
declares units and direction in ``shellpack.yaml`` beside it (docs/mmtests-conventions.md
"Benchmark logs"). mmlab does the same when pointed at a checkout (``--mmtests DIR`` or
the ``MMTESTS`` environment variable): the row is named as mmtests names it (``metric``,
then ``-factorA`` and ``-factorB`` unless ``_``), the unit is the metric's ``units`` in
``shellpack.yaml`` and "higher is better" is its ``preferhigher`` read as mmtests reads it.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import yaml

from analysis.errors import InputError
from analysis.ingest.mmtests_logs import Declared, LogRead

__all__ = ["UNITS", "checkout", "declared_metrics", "parse_results", "shellpack_dir"]

# mmtests' unit names (shellpack.yaml "units:") as mmlab writes units.
UNITS = {
    "TIME_NSECONDS": "ns",
    "TIME_USECONDS": "us",
    "TIME_MSECONDS": "ms",
    "TIME_SECONDS": "s",
    "TIME_PERCENTAGE": "%",
    "PERCENTAGE": "%",
    "OPS_PERCENTAGE": "%",
    "OPS_PER_SECOND": "ops/s",
    "OPS_PER_SEC": "ops/s",
    "KOPS_PER_SECOND": "kops/s",
    "BOPS_PER_SECOND": "bops/s",
    "OPS_PER_HOUR": "ops/h",
    "OPS_COUNT": "ops",
    "OPS_ITERATION": "ops/iteration",
    "OPS_SCORE": "score",
    "FAILURES": "failures",
    "TRANS_PER_SECOND": "trans/s",
    "KBYTES_PER_SECOND": "KB/s",
    "MBYTES_PER_SECOND": "MB/s",
    "GBYTES_PER_SECOND": "GB/s",
    "MBITS_PER_SECOND": "Mbit/s",
}
_PREFER_HIGHER = re.compile(r"(|1|higher|true)")  # ExtractShellpack.pm's test, lower-cased


def checkout(given: Path | None) -> Path | None:
    """The mmtests checkout: ``given`` (``--mmtests``), else ``$MMTESTS``, else None; an
    error when it has no ``shellpack_src/src``."""
    root = given or (Path(os.environ["MMTESTS"]) if os.environ.get("MMTESTS") else None)
    if root is not None and not (root / "shellpack_src" / "src").is_dir():
        raise InputError(root, "not an mmtests checkout (no shellpack_src/src)")
    return root


def shellpack_dir(root: Path, benchmark: str) -> Path | None:
    """``shellpack_src/src/<benchmark>`` when it has an executable ``parse-results``."""
    found = root / "shellpack_src" / "src" / benchmark
    parser = found / "parse-results"
    return found if parser.is_file() and os.access(parser, os.X_OK) else None


def _flag(value: object) -> bool:
    return isinstance(value, str) and _PREFER_HIGHER.fullmatch(value.strip().lower()) is not None


def declared_metrics(config: Path) -> tuple[dict[str, tuple[str | None, bool]], bool]:
    """({metric: (mmtests unit name or None, prefer higher)}, benchmark-wide preferhigher)
    of a ``shellpack.yaml``, read as strings as YAML::PP reads them (``yes`` is not
    ``true`` there, so not here either)."""
    doc = yaml.load(read_yaml(config), Loader=yaml.BaseLoader) or {}
    if not isinstance(doc, dict):
        raise InputError(config, "shellpack.yaml is not a mapping")
    overall = "preferhigher" in doc and _flag(doc["preferhigher"])
    metrics = {
        name: (
            spec.get("units"),
            overall or ("preferhigher" in spec and _flag(spec["preferhigher"])),
        )
        for name, spec in doc.items()
        if isinstance(spec, dict)
    }
    return metrics, overall


def read_yaml(config: Path) -> str:
    """Text of ``config``; a missing file is an error naming it."""
    try:
        return config.read_text()
    except OSError as exc:
        raise InputError(config, f"cannot read ({exc.strerror})") from None


def parse_results(root: Path, benchmark: str, logs: Path) -> LogRead:
    """Samples of ``logs`` as ``parse-results`` of ``root`` prints them (see module
    docstring). A metric ``shellpack.yaml`` gives no units for has unit ``unstated``
    and a note; a parser that fails is an error naming it and its stderr; one that exits
    0 but prints no sample, or writes on stderr, gives a note (a warning of mmlab compare)."""
    pack = shellpack_dir(root, benchmark)
    if pack is None:
        raise InputError(root, f"no executable shellpack_src/src/{benchmark}/parse-results")
    metrics, overall = declared_metrics(pack / "shellpack.yaml")
    parser = pack / "parse-results"
    try:
        done = subprocess.run(
            [str(parser), str(logs.resolve())],
            capture_output=True,
            text=True,
            errors="replace",
            timeout=600,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(parser, f"could not run on {logs}: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise InputError(parser, f"failed on {logs} (exit {done.returncode}): {last}")
    samples, notes, unstated = [], [], set()
    source = f"{pack / 'shellpack.yaml'}"
    for number, line in enumerate(done.stdout.splitlines(), 1):
        fields = line.split("\t")
        try:
            metric, a, b, value = fields[0], fields[1], fields[2], float(fields[4])
        except (IndexError, ValueError):
            notes.append(f"{parser} {logs}: output line {number} is not a sample: {line[:50]!r}")
            continue
        row = metric + "".join(f"-{f}" for f in (a, b) if f not in ("", "_"))
        unit_name, higher = metrics.get(metric, (None, overall))
        if unit_name is None:
            unstated.add(metric)
        unit = UNITS.get(unit_name or "", (unit_name or "unstated").lower())
        samples.append((row, value, Declared(unit, higher, f"{source} ({metric}: {unit_name})")))
    # mawk's "regular expression compile failed" exits 0 with nothing on stdout, and so
    # do parsers of another log format: said like a benchmark mmlab cannot read at all.
    if complaint := done.stderr.strip():
        notes.append(f"{parser} {logs}: wrote on stderr: {complaint.splitlines()[-1][:200]}")
    if not samples:
        files = sorted(p.name for p in logs.iterdir())
        notes.append(
            f"{parser} printed no sample for {logs} ({len(files)} file(s): "
            f"{', '.join(files[:3])}{', ...' if len(files) > 3 else ''}): its rows are missing"
        )
    declared = ", ".join(f"{m}: {u}" for m, (u, _) in metrics.items() if u) or "none"
    notes += [
        f"{source}: no units for metric {m!r} (declared: {declared}); its rows say 'unstated'"
        for m in sorted(unstated)
    ]
    return LogRead(tuple(samples), frozenset(p.name for p in logs.iterdir()), tuple(notes))
