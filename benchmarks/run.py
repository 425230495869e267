"""Run every benchmark (`make bench`): each ``benchmarks/bench_*.py`` exposes ``run(out_dir)``.

Results are written as Markdown/JSON into ``benchmarks/`` and committed, so the
figures quoted in issues and papers can be traced to a run anyone can repeat. Each
benchmark runs in a process of its own: a peak RSS or a first call measured in-process
is then that benchmark's, not what the ones before it left (a 1,000-point shrinker sweep
leaves ~930 MiB resident; a trace read used to leave numba loaded).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=HERE, help="where results are written")
    parser.add_argument("--only", action="append", default=[], help="bench name, e.g. ftrace")
    args = parser.parse_args(argv)
    names = sorted(p.stem.removeprefix("bench_") for p in HERE.glob("bench_*.py"))
    for name in args.only or names:
        print(f"== benchmark {name}", flush=True)
        out = str(args.out.resolve())
        code = f"import benchmarks.bench_{name} as b, pathlib; b.run(pathlib.Path({out!r}))"
        subprocess.run([sys.executable, "-c", code], cwd=HERE.parent, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
