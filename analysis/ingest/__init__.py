"""Raw capture files → typed Polars frames: ftrace text (:mod:`.ftrace`), mail histograms,
/proc/vmstat and memory.stat, mmtests trees and where their traces are (:mod:`.captures`).
Nothing here interprets the numbers; that is :mod:`analysis.metrics`."""
