"""Shared test fixtures: paths to the repository's bundled data (nothing outside the clone)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "data"
MAIL = DATA / "mail"


@pytest.fixture
def seeds_dir() -> Path:
    """data/mail/: the seed threads, committed byte for byte (data/mail/README.md).

    A missing directory is a failure, not a skip: a clone without its seeds is broken.
    """
    assert MAIL.is_dir(), f"seed mails missing: {MAIL}"
    return MAIL


def throttled_lines(iteration_dir: Path) -> list[str]:
    """``mm_vmscan_throttled`` lines of an iteration's trace, by plain text search of the
    decompressed file: a count independent of the ingest."""
    import zstandard

    raw = (iteration_dir / "ftrace-stutterp.zst").read_bytes()
    text = zstandard.ZstdDecompressor().stream_reader(raw).read().decode()
    return [line for line in text.splitlines() if "mm_vmscan_throttled:" in line]


def share_ingest_cache(directory: Path) -> None:
    """``directory/build/ingest`` is the repository's ingest cache (a symlink): a test that
    runs in ``directory`` to name copies of bundled runs by relative paths reuses their
    ingest and analysis (the cache is keyed by content) instead of redoing them cold."""
    shared = REPO / "build" / "ingest"
    shared.mkdir(parents=True, exist_ok=True)
    (directory / "build").mkdir(exist_ok=True)
    (directory / "build" / "ingest").symlink_to(shared, target_is_directory=True)


# The host captures of this project's workload (data/ also holds third-party mmtests trees
# and a TCG guest sweep): what `make`'s report and notebooks name.
CAPTURES = tuple(
    DATA / name
    for name in (
        "stutterp-aa1",
        "stutterp-aa2",
        "stutterp-ab-dirty5",
        "stutterp-dirty20",
        "stutterp-dirty5",
    )
)


@pytest.fixture(scope="session", autouse=True)
def fits_of_this_run(tmp_path_factory) -> Path:
    """Duration fits are kept (analysis/stats/memo.py) for this test run alone, shared by
    its xdist workers: no test's outcome depends on fits an earlier run left in build/."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    os.environ["MMLAB_FIT_CACHE"] = str(shared / "fits")
    return shared / "fits"


# The slowest files first: `--dist loadfile` hands files to the two workers in collection
# order, and a slow file handed out last leaves the other worker idle until it ends (the
# notebooks' fixture alone is over a minute).
SLOWEST_FIRST = (
    "test_notebooks.py",
    "test_experiment.py",
    "test_report.py",
    "test_sweep.py",
    "test_paper_bootstrap.py",
    "test_paper.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
