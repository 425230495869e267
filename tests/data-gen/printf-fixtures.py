"""Write data/mmtests-formats' pagealloc and hpagealloc fixtures from the benchmarks'
printf formats (no public results tree has either). The numbers are made up, labelled so
in data/mmtests-formats/README.md: they test parsing, not kernels.

Run from the repository root: python tests/data-gen/printf-fixtures.py
"""

import gzip
from pathlib import Path

F = Path("data/mmtests-formats/work/log")

# mmtests' stap-scripts/pagealloc-micro.stp:
#   seq_printf(m, "order %2u batch %6lu alloc %llu free %llu\n", ...)
lines, i = [], 0
for order in (0, 1):
    for batch in (1, 8):
        for _ in range(4):
            i += 1
            values = (order, batch, 100 + 7 * i, 40 + 3 * i)
            lines.append("order %2u batch %6lu alloc %u free %u" % values)  # noqa: UP031 (C's)
logs = F / "pagealloc-printf/iter-0/pagealloc/logs"
logs.mkdir(parents=True, exist_ok=True)
(logs / "pagealloc.log").write_text("\n".join(lines) + "\n")
# pagealloc-bench then splits the log into alloc-<order> and free-<order>: "<batch> <value>".
for order in (0, 1):
    mine = [line.split() for line in lines if int(line.split()[1]) == order]
    (logs / f"alloc-{order}").write_text("".join(f"{f[3]} {f[5]}\n" for f in mine))
    (logs / f"free-{order}").write_text("".join(f"{f[3]} {f[7]}\n" for f in mine))

# shellpack_src/src/hpagealloc/timed-hpagealloc.pl:
#   printf "%-4d %-4d %-d %12.4f %12.4f\n", $actual_hugepages, $nr_alloc, $nr_success,
#          $elapsed_ms, $nr_success > 0 ? $elapsed_ms / $nr_success : $elapsed_ms;
# and hpagealloc-bench gzips it.
rows = []
for k, (ok, ms) in enumerate([(2, 3.5), (2, 4.25), (1, 9.0), (0, 12.0)], 1):
    values = (2 * k, 2, ok, ms, ms / ok if ok else ms)
    rows.append("%-4d %-4d %-d %12.4f %12.4f" % values)  # noqa: UP031 (Perl's printf)
out = F / "hpagealloc-printf/iter-0/hpagealloc/logs"
out.mkdir(parents=True, exist_ok=True)
with gzip.GzipFile(out / "hpagealloc.log.gz", "wb", mtime=0) as f:
    f.write(("\n".join(rows) + "\n").encode())
