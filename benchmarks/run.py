"""Run every benchmark (`make bench`): each ``benchmarks/bench_*.py`` exposes ``run(out_dir)``.

Results are written as Markdown/JSON into ``benchmarks/`` and committed, so the
figures quoted in issues and papers can be traced to a run anyone can repeat.
"""

from __future__ import annotations

import argparse
import importlib
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
        importlib.import_module(f"benchmarks.bench_{name}").run(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
