# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The /proc monitors of an mmtests tree
#
# mmtests records /proc files beside each test (docs/inputs.md "mmtests monitors"):
# vmstat(8) every interval, and on request buddyinfo, pagetypeinfo, zoneinfo, slabinfo
# and meminfo. This notebook charts whichever of them a tree holds. The bundled mmtests CI
# trees recorded vmstat(8) only; `tests/data/mmtests-monitors` (recorded on this
# project's machine) has every monitor. Run headless by `make` (papermill).

# %% tags=["parameters"]
tree = "data/mmtests-ci"
monitors_tree = "tests/data/mmtests-monitors"
build_dir = "build"

# %%
from pathlib import Path

from IPython.display import Markdown, display

from analysis.ingest.mmtests import find_runs
from analysis.ingest.proc_monitors import runs_monitor
from analysis.report.charts import theme
from analysis.report.charts.monitors import buddy_chart, slab_chart, vmstat8_chart
from analysis.report.findings import monitor_finding

theme.offline()  # static SVG charts: they show with no network and in any viewer

figures = Path(build_dir) / "figures"
figures.mkdir(parents=True, exist_ok=True)
runs = find_runs(Path(tree))
for run in runs:
    print(f"{run.name}: {len(run.iterations)} iterations under {run.path}")
detailed = find_runs(Path(monitors_tree)) if Path(monitors_tree).exists() else ()


def monitor(name: str):
    """The monitor's samples in ``tree``, else in ``monitors_tree`` (saying so)."""
    frame = runs_monitor(runs, name)
    if frame.is_empty() and name != "vmstat":
        print(f"{tree}: no {name} monitor; charting {monitors_tree}")
        frame = runs_monitor(detailed, name)
    return frame


def show(frame, chart_of, figure: str) -> None:
    """Draw ``frame`` (when it has samples), save it as figures/07-<figure>.svg."""
    if frame.height:
        chart = chart_of(frame)
        chart.save(figures / f"07-{figure}.svg")
        display(chart)


# %% [markdown]
# ## vmstat(8): memory and CPU over time
# Memory columns are KiB in vmstat's output, drawn in GiB; CPU columns are percentages.

# %%
vmstat8 = monitor("vmstat")
display(Markdown(f"**Finding.** {monitor_finding(vmstat8)}"))
show(vmstat8, vmstat8_chart, "vmstat8")

# %% [markdown]
# ## Free memory by buddy order
# Where free memory sits by order, summed over nodes and zones: memory moving to low
# orders while the total stays is fragmentation.

# %%
show(monitor("proc-buddyinfo"), buddy_chart, "buddyinfo")

# %% [markdown]
# ## The largest slab caches

# %%
show(monitor("slabinfo"), slab_chart, "slabinfo")
