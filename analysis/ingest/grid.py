"""The one grid grammar of ``mmlab sweep`` and ``mmlab sweep-notebook``: a YAML file of points.

Either a mapping, parameter name → a scalar (fixed), a non-empty list of values, or a range
``{start, stop, num}`` (evenly spaced, stop included; ``log: true`` for geometric spacing)
or ``{start, stop, step}`` (stop included when reached; integers when start and step are);
the points are the Cartesian product in the file's order. Or a list of mappings, each one
point (for grids that are not a product), its values taken as they are. The grammar as a
user reads it: docs/sweeps.md.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import yaml

from analysis.errors import InputError, input_file
from analysis.ingest.textfile import read_text

__all__ = ["GRID_MAX_BYTES", "RANGE_KEYS", "grid_points", "read_grid"]

RANGE_KEYS = {"start", "stop", "num", "log", "step"}
# A grid is a few lines by hand; PyYAML takes minutes over a 50 MB line.
GRID_MAX_BYTES = 1 << 20


def _range(path: Path, name: str, spec: dict, line: int | None) -> list[object]:
    def fail(why: str) -> InputError:
        return InputError(path, f"parameter {name!r}: {why}", line)

    unknown = set(spec) - RANGE_KEYS
    if unknown or not {"start", "stop"} <= set(spec) or ("num" in spec) == ("step" in spec):
        raise fail("a range needs start, stop and one of num or step (and optionally log)")
    try:
        start, stop = float(spec["start"]), float(spec["stop"])
        count = int(spec["num"]) if "num" in spec else None
        step = float(spec["step"]) if "step" in spec else None
    except (TypeError, ValueError) as exc:
        raise fail(f"a range's start, stop, num and step are numbers ({exc})") from None
    if count is not None:
        if count <= 0:
            raise fail(f"empty range (num = {count})")
        if spec.get("log"):
            if start <= 0 or stop <= 0:
                raise fail("a log range needs start and stop > 0")
            return np.geomspace(start, stop, count).tolist()
        return np.linspace(start, stop, count).tolist()
    assert step is not None
    if not step > 0 or stop < start:
        raise fail(f"empty range (start {start}, stop {stop}, step {step})")
    n = int(np.floor((stop - start) / step + 1e-9)) + 1
    values = start + step * np.arange(n)
    # Integer start and step give integers: a divisor or worker count of 3.0 is not 3.
    if all(isinstance(spec[k], int) and not isinstance(spec[k], bool) for k in ("start", "step")):
        return values.astype(int).tolist()
    return values.tolist()


def grid_points(grid: Mapping[str, Sequence[object]]) -> list[dict[str, object]]:
    """The Cartesian product of ``grid`` (name → values), in its order."""
    names = list(grid)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*grid.values())]


def _product(path: Path, raw: dict, node: yaml.MappingNode) -> list[dict[str, object]]:
    lines = {k.value: k.start_mark.line + 1 for k, _ in node.value}
    grid: dict[str, list[object]] = {}
    for name, spec in raw.items():
        line = lines.get(str(name))
        if isinstance(spec, dict):
            values = _range(path, str(name), spec, line)
        elif isinstance(spec, list):
            values = spec
        else:
            values = [spec]
        if not values:
            raise InputError(path, f"parameter {name!r}: empty list of values", line)
        grid[str(name)] = values
    return grid_points(grid)


def read_grid(path: Path) -> list[dict[str, object]]:
    """The points of the YAML grid file at ``path`` (module docstring), in file order;
    InputError naming the line of what is not a grid."""
    text = read_text(input_file(path, max_bytes=GRID_MAX_BYTES))
    try:
        node = yaml.compose(text)
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        # PyYAML's own text spans several lines with a snippet; one line here.
        mark = getattr(exc, "problem_mark", None)
        why = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" (column {mark.column + 1})" if mark else ""
        raise InputError(path, f"not YAML: {why}{where}", mark.line + 1 if mark else None) from exc
    if isinstance(raw, dict) and raw:
        return _product(path, raw, node)
    if isinstance(raw, list) and raw:
        for item, point in zip(node.value, raw, strict=True):
            if not isinstance(point, dict) or not point:
                line = item.start_mark.line + 1
                raise InputError(path, "a list grid holds one mapping (a point) per item", line)
        return [{str(k): v for k, v in point.items()} for point in raw]
    raise InputError(
        path,
        "a grid is a mapping of parameter → value, list or range (every combination), "
        "or a list of mappings (one point each)",
    )
