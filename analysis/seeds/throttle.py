"""Seed 000's ``mm_vmscan_throttled`` histograms (5.15-rc1, from its mail) fitted as a run's
throttle groups are (:func:`analysis.stats.fit.fit_throttle_groups`), HZ from the delay
quantum; they have no iterations."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from analysis.ingest import histogram
from analysis.ingest.ftrace.events import THROTTLED
from analysis.metrics import pairing, throttle
from analysis.stats.fit import GroupFailure, GroupFit, fit_throttle_groups

__all__ = ["SEED_LABELS", "SEED_MAIL", "seed_groups"]

# Package data: a byte-for-byte copy of data/mail/000_901e324e43c5b0b5.txt, so that an
# installed mmlab (a wheel, no repository) builds the paper too; tests/test_paper_sections.py
# checks the copy.
SEED_MAIL = Path(__file__).with_name("seed-000-mail.txt")
# Seed 000's blocks as its prose names them (as notebook 03): 2 kswapd, 4-6 direct.
SEED_LABELS = {2: "kswapd", 4: "direct", 5: "direct", 6: "direct"}


def seed_groups(path: Path = SEED_MAIL, bootstrap: int = 0) -> list[GroupFit | GroupFailure]:
    """Seed 000's ``mm_vmscan_throttled`` histograms fitted (HZ from the delay quantum)."""
    events = throttle.throttle_events(
        histogram.read(path, labels=SEED_LABELS), pairing.all_intervals({})
    ).filter(pl.col("event") == THROTTLED)
    return fit_throttle_groups(events, throttle.infer_hz(events).jiffy_us, bootstrap=bootstrap)
