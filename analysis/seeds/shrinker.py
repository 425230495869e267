"""Seed 001's worked example (a node's 1.8 M freeable objects, priority 12, 1 M deferred)
through the shrinker model's own ``do_shrink_slab()`` (:mod:`analysis.models.shrinker`),
beside the plain integer arithmetic of :func:`analysis.seeds.checks.seed001` and the
figures the mail prints (docs/shrinker-deferral.md "Deferral divisor")."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from analysis.models.shrinker import FS_SHRINKERS, Variant, do_shrink_slab
from analysis.seeds.checks import SEED001_EXAMPLE, seed001

__all__ = ["SEED_BATCH", "seed_divisors", "seed_example"]

# Seed 001's cache is a filesystem's (XFS inodes): a superblock shrinker's batch.
SEED_BATCH = FS_SHRINKERS["super_cache_scan"]


def _seed_call(variant: Variant, kswapd: bool = False):
    """Seed 001's call (:data:`~analysis.seeds.checks.SEED001_EXAMPLE`) under ``variant``."""
    e = SEED001_EXAMPLE
    return do_shrink_slab(
        variant,
        deferred=e["deferred"],
        freeable=e["freeable"],
        priority=e["priority"],
        seeks=e["seeks"],
        kswapd=kswapd,
        batch=SEED_BATCH,
    )


def seed_divisors(divisors: Sequence[int]) -> pl.DataFrame:
    """Seed 001's call under G3's rule with each constant divisor: objects it scans and
    objects left deferred after it (``divisor``, ``quantity``, ``objects``)."""
    rows = []
    for d in divisors:
        call = _seed_call(Variant("G3", d))
        left = SEED001_EXAMPLE["deferred"] - call.nr + call.next_deferred
        rows += [(d, "scanned by the call", call.scanned), (d, "left deferred", left)]
    return pl.DataFrame(rows, schema=["divisor", "quantity", "objects"], orient="row")


def seed_example() -> list[dict]:
    """Seed 001's call under each rule and context: the mail's figure, the plain integer
    arithmetic (:func:`~analysis.seeds.checks.seed001`) and the model's ``do_shrink_slab``
    (target, objects scanned in batches of the superblock shrinker, counter after)."""
    checks = {c.row: c for c in seed001()}
    cases = (
        ("G1", False, "any", "G1 target (windup clamp)"),
        ("G2", True, "kswapd", "G2 target, kswapd"),
        ("G2", False, "direct", "G2 target, direct"),
        ("G3", False, "any", "G3 target, any context"),
    )
    rows = []
    for generation, kswapd, context, check in cases:
        call = _seed_call(Variant(generation), kswapd)
        rows.append(
            {
                "rule": generation,
                "context": context,
                "mail": checks[check].mail,
                "arithmetic": int(checks[check].mmlab),
                "delta": call.delta,
                "target": call.total_scan,
                "scanned": call.scanned,
                "counter_after": SEED001_EXAMPLE["deferred"] - call.nr + call.next_deferred,
            }
        )
    return rows
