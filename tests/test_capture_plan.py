"""The stutterp workload plan: worker split and memory share-out, checked by hand arithmetic."""

from __future__ import annotations

import pytest

from analysis.capture.plan import (
    MIB,
    PAGE_BYTES,
    PlanParams,
    max_limit_bytes,
    phase_plan,
    split_workers,
)


@pytest.mark.parametrize(
    ("workers", "writers", "hogs"), [(3, 1, 1), (4, 1, 2), (8, 3, 4), (16, 7, 8), (48, 23, 24)]
)
def test_split_is_probe_plus_writers_plus_hogs(workers, writers, hogs):
    assert split_workers(workers) == (writers, hogs)
    assert 1 + writers + hogs == workers


def test_split_refuses_fewer_than_three_workers():
    with pytest.raises(ValueError, match="at least 3 workers"):
        split_workers(2)


def test_share_out_for_256_mib_dirty20_4_workers_by_hand():
    # limit 268435456 B; dirty share = 268435456 * 20 // 100 = 53687091 B.
    # overhead = 12 MiB launcher + 4 * 1.25 MiB = 12582912 + 5242880 = 17825792 B.
    # anon = 268435456 - 53687091 - 1048576 - 25165824 - 17825792 = 170708173 B over 2 hogs
    #      = 85354086 B each, rounded down to pages: 20838 * 4096 = 85352448 B.
    # files = 2 * 53687091 + 25165824 = 132540006 B, one writer: 32358 pages = 132538368 B.
    plan = phase_plan(PlanParams(limit_bytes=256 * MIB, dirty_ratio=20), 4)
    assert (plan.writers, plan.hogs) == (1, 2)
    assert plan.overhead_bytes == 17825792
    assert plan.anon_bytes_per_hog == 85352448
    assert plan.file_bytes_per_writer == 132538368
    assert plan.probe_map_bytes == MIB


@pytest.mark.parametrize("dirty_ratio", [5, 10, 20, 40])
@pytest.mark.parametrize("workers", [4, 8, 16])
def test_working_set_is_limit_plus_dirty_share(dirty_ratio, workers):
    """stutterp's WSS = (100 + dirty_ratio)% of memory, whatever the margin and overhead."""
    limit = 512 * MIB
    plan = phase_plan(PlanParams(limit_bytes=limit, dirty_ratio=dirty_ratio), workers)
    wss = plan.probe_map_bytes + plan.anon_total_bytes + plan.file_total_bytes
    wss += plan.overhead_bytes
    expected = limit + limit * dirty_ratio // 100
    # Page rounding per hog and per writer loses at most one page each.
    assert expected - workers * PAGE_BYTES <= wss <= expected
    # Without swap only file pages can be reclaimed: anon plus overhead must fit with the
    # dirty share and the margin still free.
    unreclaimable = plan.probe_map_bytes + plan.anon_total_bytes + plan.overhead_bytes
    assert unreclaimable <= limit - limit * dirty_ratio // 100 - 24 * MIB
    assert plan.anon_bytes_per_hog % PAGE_BYTES == 0
    assert plan.file_bytes_per_writer % PAGE_BYTES == 0


def test_too_small_a_limit_is_refused_with_the_numbers():
    with pytest.raises(ValueError, match=r"limit 48 MiB leaves no room for 8 anon hogs"):
        phase_plan(PlanParams(limit_bytes=48 * MIB, dirty_ratio=20), 16)


@pytest.mark.parametrize("ratio", [0, 100])
def test_dirty_ratio_out_of_range(ratio):
    with pytest.raises(ValueError, match="dirty_ratio"):
        phase_plan(PlanParams(limit_bytes=256 * MIB, dirty_ratio=ratio), 4)


def test_limit_cap_is_half_of_mem_available():
    assert max_limit_bytes(24 * 1024 * MIB) == 12 * 1024 * MIB
    assert max_limit_bytes(1000, fraction=0.25) == 250
