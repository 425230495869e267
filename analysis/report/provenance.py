"""Each run's provenance (:mod:`analysis.study.provenance`) as the report's text."""

from __future__ import annotations

from collections.abc import Sequence

from analysis.study.provenance import Provenance

__all__ = ["format_provenance"]


def format_provenance(rows: Sequence[Provenance]) -> str:
    """One block per run: what is common to its iterations once, differences per iteration."""
    out: list[str] = []
    for run in dict.fromkeys(r.run for r in rows):
        mine = [r for r in rows if r.run == run]
        out.append(
            f"{run}: {len(mine)} iteration{'s' if len(mine) > 1 else ''} "
            f"({', '.join(f'iter-{r.iteration}' for r in mine)})"
        )
        for label, values in (
            ("kernel", [r.kernel or "unknown" for r in mine]),
            ("CONFIG_HZ", [str(r.config_hz) if r.config_hz else "unknown" for r in mine]),
            ("machine", [r.machine or "not recorded" for r in mine]),
            (
                "memory",
                [f"{r.memory_kib / 1048576:.1f} GiB" if r.memory_kib else "unknown" for r in mine],
            ),
            ("memcg", [r.cgroup or "not recorded" for r in mine]),
            ("tests", [" ".join(r.tests) or "none found" for r in mine]),
        ):
            if len(set(values)) == 1:
                out.append(f"  {label:<10} {values[0]}")
            else:
                out += [
                    f"  {label:<10} iter-{r.iteration}: {v}"
                    for r, v in zip(mine, values, strict=True)
                ]
    return "\n".join(out) + "\n"
