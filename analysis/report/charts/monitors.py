"""Altair charts of mmtests' /proc monitors (:mod:`analysis.ingest.proc_monitors`):
vmstat(8) memory and CPU over time, free memory by buddy order, the largest slab caches."""

from __future__ import annotations

import altair as alt
import polars as pl

__all__ = ["buddy_chart", "slab_chart", "vmstat8_chart"]

_MEMORY = ("free", "buff", "cache", "swpd")
_CPU = ("us", "sy", "id", "wa")


def vmstat8_chart(frame: pl.DataFrame) -> alt.FacetChart:
    """vmstat(8) memory (GiB, from KiB) and CPU shares (%) over time, one line per run."""
    memory = frame.unpivot(
        index=["run", "iteration", "t_s"], on=list(_MEMORY), variable_name="column"
    ).with_columns(value=pl.col("value") / (1 << 20), panel=pl.lit("memory (GiB)"))
    cpu = frame.unpivot(
        index=["run", "iteration", "t_s"], on=list(_CPU), variable_name="column"
    ).with_columns(value=pl.col("value").cast(pl.Float64), panel=pl.lit("cpu (%)"))
    return (
        alt.Chart(pl.concat([memory, cpu]))
        .mark_line(point=True, opacity=0.8)
        .encode(
            x=alt.X("t_s:Q", title="time since first sample (s)"),
            y=alt.Y("value:Q", title=None),
            color=alt.Color("column:N", title="vmstat"),
            strokeDash=alt.StrokeDash("run:N"),
            detail="iteration:N",
        )
        .properties(width=280, height=160)
        .facet(column=alt.Column("panel:N", title=None))
        .resolve_scale(y="independent")
    )


def buddy_chart(frame: pl.DataFrame, page_kib: int = 4) -> alt.Chart:
    """Free memory (MiB) held in blocks of each order, summed over nodes and zones, over
    time: memory moving to low orders is fragmentation (``page_kib``: the page size)."""
    free = frame.group_by("run", "iteration", "t_s", "order").agg(
        mib=(pl.col("free_blocks") * (2 ** pl.col("order")) * page_kib).sum() / 1024
    )
    return (
        alt.Chart(free)
        .mark_area()
        .encode(
            x=alt.X("t_s:Q", title="time since first sample (s)"),
            y=alt.Y("mib:Q", title="free memory (MiB)", stack=True),
            color=alt.Color("order:O", title="order"),
        )
        .properties(width=560, height=200)
    )


def slab_chart(frame: pl.DataFrame, top: int = 10, page_kib: int = 4) -> alt.Chart:
    """Size (MiB: slabs × pages per slab) of the ``top`` largest caches at the last sample."""
    size = frame.with_columns(mib=pl.col("num_slabs") * pl.col("pagesperslab") * page_kib / 1024)
    last = size.filter(pl.col("sample") == pl.col("sample").max())
    largest = last.sort("mib", descending=True).head(top)["cache"].to_list()
    return (
        alt.Chart(size.filter(pl.col("cache").is_in(largest)))
        .mark_line(point=True)
        .encode(
            x=alt.X("t_s:Q", title="time since first sample (s)"),
            y=alt.Y("mib:Q", title="slab cache size (MiB)"),
            color=alt.Color("cache:N", title="cache", sort=largest),
        )
        .properties(width=560, height=200)
    )
