"""Any benchmark's results as one long table: a row per sample.

Columns ``kernel`` (the configuration compared), ``row`` (what was measured, e.g.
``mmap-4``), ``run`` (an independent iteration), ``value``, ``unit`` and optionally
``higher_is_better`` (default false: latencies and times). CSV or Parquet, told apart by
content (Parquet files start with ``PAR1``).
"""

from __future__ import annotations

import io
from pathlib import Path

import polars as pl

from analysis.errors import InputError, input_file
from analysis.ingest.textfile import read_text

__all__ = ["COLUMNS", "SCHEMA", "read", "validate"]

SCHEMA = {
    "kernel": pl.String,
    "row": pl.String,
    "run": pl.String,
    "value": pl.Float64,
    "unit": pl.String,
    "higher_is_better": pl.Boolean,
}
COLUMNS = tuple(SCHEMA)


def validate(frame: pl.DataFrame, source: str | Path) -> pl.DataFrame:
    """``frame`` with the table's columns in order and types; InputError naming the
    first line (1-based, header = line 1) whose row is unusable (an empty name, an infinite
    value, a second unit for a row)."""
    missing = [c for c in COLUMNS[:5] if c not in frame.columns]
    if missing:
        raise InputError(source, f"missing column(s) {', '.join(missing)}; need {COLUMNS}")
    if "higher_is_better" not in frame.columns:
        frame = frame.with_columns(higher_is_better=pl.lit(False))
    frame = frame.with_row_index("line", offset=2)
    try:
        cast = frame.select("line", *(pl.col(c).cast(t, strict=True) for c, t in SCHEMA.items()))
    except pl.exceptions.InvalidOperationError as exc:
        raise InputError(source, f"a column has the wrong type ({exc})") from None
    for column in ("kernel", "row", "run", "unit"):
        empty = cast.filter(pl.col(column).is_null() | (pl.col(column) == ""))
        if empty.height:
            raise InputError(source, f"empty {column}", line=int(empty["line"][0]))
    # inf would pass every test as an extreme sample (p 0, -100 %); NaN is a missing
    # sample, left out and counted in the notes (runs_of).
    infinite = cast.filter(pl.col("value").is_infinite())
    if infinite.height:
        value = infinite["value"][0]
        raise InputError(source, f"value {value} is not finite", line=int(infinite["line"][0]))
    first_unit = pl.col("unit").first().over("row", order_by="line")
    mixed = cast.filter(pl.col("unit") != first_unit).sort("line")
    if mixed.height:
        row, line = mixed["row"][0], int(mixed["line"][0])
        raise InputError(source, f"row {row!r} has several units", line=line)
    return cast.drop("line").with_columns(pl.col("higher_is_better").fill_null(False))


def read(path: Path) -> pl.DataFrame:
    """The validated table in ``path`` (CSV or Parquet)."""
    with input_file(path).open("rb") as f:
        magic = f.read(4)
    if magic == b"PAR1":
        try:
            frame = pl.read_parquet(path)
        except (pl.exceptions.PolarsError, OSError) as exc:
            raise InputError(path, f"not a readable Parquet table ({exc})") from None
    else:
        # Checked text first (compression, NUL bytes, UTF-8, each with its line or offset);
        # Polars' own errors name no file.
        text = read_text(path)
        if not text.strip():
            raise InputError(path, "is empty: no header line")
        try:
            frame = pl.read_csv(io.StringIO(text), infer_schema=False)
        except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as exc:
            raise InputError(path, f"not a CSV table ({str(exc).splitlines()[0]})") from None
        if "value" in frame.columns:
            frame = frame.with_columns(
                pl.col("value").str.strip_chars().replace({"": None}).cast(pl.Float64, strict=False)
                .alias("value"),
                pl.col("value").alias("_raw"),
            )  # fmt: skip
            bad = frame.with_row_index("line", offset=2).filter(
                pl.col("value").is_null() & pl.col("_raw").is_not_null()
                & ~pl.col("_raw").str.to_lowercase().str.strip_chars().is_in(["nan", ""])
            )  # fmt: skip
            if bad.height:
                raw = bad["_raw"][0]
                raise InputError(path, f"value {raw!r} is not a number", line=int(bad["line"][0]))
            frame = frame.drop("_raw")
        if "higher_is_better" in frame.columns:
            frame = frame.with_columns(
                pl.col("higher_is_better").str.to_lowercase().is_in(["true", "1", "yes"])
            )
    return validate(frame, path)
