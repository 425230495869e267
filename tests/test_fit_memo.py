"""The disk memo of duration fits (analysis/stats/memo.py): a kept fit is the fit itself,
other inputs or other code never get it, and a damaged entry is fitted again."""

import pickle

import numpy as np
import pytest

from analysis.report.fit import format_fits
from analysis.stats import memo
from analysis.stats.families import FAMILIES
from analysis.stats.fit import JiffyData, fit_group

# A short group of recorded jiffies (k = 0..7, 7 = the timeout), HZ 250.
COUNTS = np.array([30, 20, 10, 5, 3, 2, 1, 4])
FAMILY_NAMES = ("weibull", "lognormal")


def _fit(counts=COUNTS, **options):
    data = JiffyData(np.asarray(counts), 4000.0, 28000.0)
    return fit_group(data, reason="VMSCAN_THROTTLE_WRITEBACK", families=FAMILY_NAMES, **options)


def _entries(root):
    return sorted(root.glob("*/*.pickle"))


@pytest.fixture
def kept(tmp_path, monkeypatch):
    monkeypatch.setenv("MMLAB_FIT_CACHE", str(tmp_path))
    return tmp_path


def test_a_kept_fit_is_the_fit(kept):
    fresh = _fit(cache=False)
    assert _entries(kept) == []
    first = _fit()
    assert len(_entries(kept)) == 1
    again = _fit()
    for fit in (first, again):
        assert format_fits([fit]) == format_fits([fresh])
        assert [m.name for m in fit.models] == [m.name for m in fresh.models]
        for a, b in zip(fit.models, fresh.models, strict=True):
            assert np.array_equal(a.theta, b.theta)
            assert a.loglik == b.loglik


def test_other_inputs_are_other_entries(kept):
    _fit()
    other = COUNTS.copy()
    other[-1] += 1  # one more sleep at the timeout
    _fit(other)
    _fit(bootstrap=0, seed=1)
    assert len(_entries(kept)) == 3
    assert _fit(other).data.counts[-1] == 5


def test_a_cut_entry_is_fitted_again(kept):
    _fit()
    (entry,) = _entries(kept)
    entry.write_bytes(entry.read_bytes()[:20])
    assert format_fits([_fit()]) == format_fits([_fit(cache=False)])
    pickle.loads(entry.read_bytes())  # rewritten whole


def test_another_code_key_drops_the_old_fits(kept, monkeypatch):
    _fit()
    (old,) = _entries(kept)
    monkeypatch.setattr(memo, "code_key", lambda: "0.0.0-changed")
    _fit()
    (new,) = _entries(kept)
    assert new.parent.name == "0.0.0-changed"
    assert not old.exists()


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MMLAB_FIT_CACHE", "off")
    _fit()
    assert not any(tmp_path.iterdir())


def test_a_family_comes_back_as_the_modules_own():
    for family in FAMILIES.values():
        assert pickle.loads(pickle.dumps(family)) is family
